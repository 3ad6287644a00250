package route53double

import (
	"encoding/xml"
	"fmt"
	"net/http"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// The XML shapes of requests and responses, named as the API reference names the elements.
// Lists are <Plural><Singular>…</Singular></Plural>, as REST-XML encodes them.

type xmlResourceRecord struct {
	Value string `xml:"Value"`
}

type xmlResourceRecordSet struct {
	Name             string              `xml:"Name"`
	Type             string              `xml:"Type"`
	SetIdentifier    string              `xml:"SetIdentifier,omitempty"`
	Weight           *int64              `xml:"Weight,omitempty"`
	MultiValueAnswer *bool               `xml:"MultiValueAnswer,omitempty"`
	TTL              *int64              `xml:"TTL,omitempty"`
	ResourceRecords  []xmlResourceRecord `xml:"ResourceRecords>ResourceRecord,omitempty"`
	AliasTarget      *struct{}           `xml:"AliasTarget,omitempty"`
	HealthCheckId    string              `xml:"HealthCheckId,omitempty"`
}

type xmlChange struct {
	Action            string               `xml:"Action"`
	ResourceRecordSet xmlResourceRecordSet `xml:"ResourceRecordSet"`
}

type changeResourceRecordSetsRequest struct {
	XMLName     xml.Name `xml:"ChangeResourceRecordSetsRequest"`
	ChangeBatch struct {
		Comment string      `xml:"Comment"`
		Changes []xmlChange `xml:"Changes>Change"`
	} `xml:"ChangeBatch"`
}

type xmlChangeInfo struct {
	Id          string `xml:"Id"`
	Status      string `xml:"Status"`
	SubmittedAt string `xml:"SubmittedAt"`
	Comment     string `xml:"Comment,omitempty"`
}

// changeInfoResponse is the answer of the operations that return a ChangeInfo: the document
// <OperationResponse> (ChangeResourceRecordSetsResponse, GetChangeResponse).
type changeInfoResponse struct {
	XMLName    xml.Name
	Xmlns      string        `xml:"xmlns,attr"`
	ChangeInfo xmlChangeInfo `xml:"ChangeInfo"`
}

// changeInfoAnswer is operation's answer with info.
func changeInfoAnswer(operation string, info xmlChangeInfo) changeInfoResponse {
	return changeInfoResponse{XMLName: xml.Name{Local: operation + "Response"}, Xmlns: Namespace, ChangeInfo: info}
}

type listResourceRecordSetsResponse struct {
	XMLName              xml.Name               `xml:"ListResourceRecordSetsResponse"`
	Xmlns                string                 `xml:"xmlns,attr"`
	ResourceRecordSets   []xmlResourceRecordSet `xml:"ResourceRecordSets>ResourceRecordSet"`
	IsTruncated          bool                   `xml:"IsTruncated"`
	NextRecordName       string                 `xml:"NextRecordName,omitempty"`
	NextRecordType       string                 `xml:"NextRecordType,omitempty"`
	NextRecordIdentifier string                 `xml:"NextRecordIdentifier,omitempty"`
	MaxItems             string                 `xml:"MaxItems"`
}

// invalidChangeBatch is Route 53's own error document for a refused batch: one message per
// problem, no Error wrapper.
type invalidChangeBatch struct {
	XMLName   xml.Name `xml:"InvalidChangeBatch"`
	Xmlns     string   `xml:"xmlns,attr"`
	Messages  []string `xml:"Messages>Message"`
	RequestID string   `xml:"RequestId"`
}

// batchError is a refused change batch, answered with the InvalidChangeBatch document instead
// of an ErrorResponse.
type batchError struct{ messages []string }

func (e *batchError) Error() string { return fmt.Sprintf("InvalidChangeBatch: %v", e.messages) }

func invalidInput(format string, args ...any) *awsdouble.Error {
	return awsdouble.Errorf(http.StatusBadRequest, "InvalidInput", format, args...)
}

func writeResult(w http.ResponseWriter, result any) {
	if err := awsdouble.WriteXML(w, http.StatusOK, result); err != nil {
		writeError(w, "", err)
	}
}

// writeError answers err: a batchError with the InvalidChangeBatch document, any other as an
// ErrorResponse.
func writeError(w http.ResponseWriter, reqID string, err error) {
	if e, ok := err.(*batchError); ok {
		_ = awsdouble.WriteXML(w, http.StatusBadRequest, invalidChangeBatch{Xmlns: Namespace, Messages: e.messages, RequestID: reqID})
		return
	}
	awsdouble.WriteError(w, Namespace, reqID, err)
}
