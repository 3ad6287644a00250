package route53double

import (
	"encoding/xml"
	"fmt"
	"net/http"
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

type changeResourceRecordSetsResponse struct {
	XMLName    xml.Name      `xml:"ChangeResourceRecordSetsResponse"`
	Xmlns      string        `xml:"xmlns,attr"`
	ChangeInfo xmlChangeInfo `xml:"ChangeInfo"`
}

type getChangeResponse struct {
	XMLName    xml.Name      `xml:"GetChangeResponse"`
	Xmlns      string        `xml:"xmlns,attr"`
	ChangeInfo xmlChangeInfo `xml:"ChangeInfo"`
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

// errorResponse is the REST-XML error document.
type errorResponse struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

// invalidChangeBatch is Route 53's own error document for a refused batch: one message per
// problem, no Error wrapper.
type invalidChangeBatch struct {
	XMLName   xml.Name `xml:"InvalidChangeBatch"`
	Xmlns     string   `xml:"xmlns,attr"`
	Messages  []string `xml:"Messages>Message"`
	RequestID string   `xml:"RequestId"`
}

// apiError is an error the API answers with: the HTTP status, the code and the message. A
// batchError is answered with the InvalidChangeBatch document instead.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

type batchError struct{ messages []string }

func (e *batchError) Error() string { return fmt.Sprintf("InvalidChangeBatch: %v", e.messages) }

func invalidInput(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "InvalidInput", fmt.Sprintf(format, args...)}
}

func writeResult(w http.ResponseWriter, result any) {
	body, err := xml.Marshal(result)
	if err != nil {
		writeError(w, "", &apiError{http.StatusInternalServerError, "InternalFailure", err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, reqID string, err error) {
	var doc any
	status := http.StatusBadRequest
	switch e := err.(type) {
	case *batchError:
		doc = invalidChangeBatch{Xmlns: Namespace, Messages: e.messages, RequestID: reqID}
	default:
		ae, ok := err.(*apiError)
		if !ok {
			ae = &apiError{http.StatusInternalServerError, "InternalFailure", err.Error()}
		}
		var d errorResponse
		d.Xmlns = Namespace
		d.Error.Type = "Sender"
		if ae.status >= 500 {
			d.Error.Type = "Receiver"
		}
		d.Error.Code, d.Error.Message, d.RequestID = ae.code, ae.message, reqID
		doc, status = d, ae.status
	}
	body, _ := xml.Marshal(doc)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
