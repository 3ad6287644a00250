package elbv2double

import (
	"encoding/xml"
	"fmt"
	"net/http"
)

// The XML shapes of the responses, named as the API reference names the elements. Lists are
// <Name><member>…</member></Name>, as the Query protocol encodes them.

type xmlMatcher struct {
	HttpCode string `xml:"HttpCode"`
}

type xmlTargetGroup struct {
	TargetGroupArn             string     `xml:"TargetGroupArn"`
	TargetGroupName            string     `xml:"TargetGroupName"`
	Protocol                   string     `xml:"Protocol"`
	ProtocolVersion            string     `xml:"ProtocolVersion"`
	Port                       int        `xml:"Port"`
	VpcId                      string     `xml:"VpcId"`
	HealthCheckProtocol        string     `xml:"HealthCheckProtocol"`
	HealthCheckPort            string     `xml:"HealthCheckPort"`
	HealthCheckEnabled         bool       `xml:"HealthCheckEnabled"`
	HealthCheckIntervalSeconds int        `xml:"HealthCheckIntervalSeconds"`
	HealthCheckTimeoutSeconds  int        `xml:"HealthCheckTimeoutSeconds"`
	HealthyThresholdCount      int        `xml:"HealthyThresholdCount"`
	UnhealthyThresholdCount    int        `xml:"UnhealthyThresholdCount"`
	HealthCheckPath            string     `xml:"HealthCheckPath"`
	Matcher                    xmlMatcher `xml:"Matcher"`
	LoadBalancerArns           []string   `xml:"LoadBalancerArns>member"`
	TargetType                 string     `xml:"TargetType"`
	IpAddressType              string     `xml:"IpAddressType"`
}

type xmlAttribute struct {
	Key   string `xml:"Key"`
	Value string `xml:"Value"`
}

type xmlTarget struct {
	Id   string `xml:"Id"`
	Port int    `xml:"Port"`
}

type xmlTargetHealth struct {
	State       string `xml:"State"`
	Reason      string `xml:"Reason,omitempty"`
	Description string `xml:"Description,omitempty"`
}

type xmlTargetHealthDescription struct {
	Target          xmlTarget       `xml:"Target"`
	HealthCheckPort string          `xml:"HealthCheckPort"`
	TargetHealth    xmlTargetHealth `xml:"TargetHealth"`
}

type describeTargetGroupsResult struct {
	XMLName      xml.Name         `xml:"DescribeTargetGroupsResult"`
	TargetGroups []xmlTargetGroup `xml:"TargetGroups>member"`
}

type modifyTargetGroupResult struct {
	XMLName      xml.Name         `xml:"ModifyTargetGroupResult"`
	TargetGroups []xmlTargetGroup `xml:"TargetGroups>member"`
}

type describeTargetGroupAttributesResult struct {
	XMLName    xml.Name       `xml:"DescribeTargetGroupAttributesResult"`
	Attributes []xmlAttribute `xml:"Attributes>member"`
}

type modifyTargetGroupAttributesResult struct {
	XMLName    xml.Name       `xml:"ModifyTargetGroupAttributesResult"`
	Attributes []xmlAttribute `xml:"Attributes>member"`
}

type describeTargetHealthResult struct {
	XMLName                  xml.Name                     `xml:"DescribeTargetHealthResult"`
	TargetHealthDescriptions []xmlTargetHealthDescription `xml:"TargetHealthDescriptions>member"`
}

type registerTargetsResult struct {
	XMLName xml.Name `xml:"RegisterTargetsResult"`
}

type deregisterTargetsResult struct {
	XMLName xml.Name `xml:"DeregisterTargetsResult"`
}

// envelope is <ActionResponse xmlns=…><ActionResult>…</ActionResult><ResponseMetadata>….
type envelope struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	Result    any
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

// errorEnvelope is the Query protocol's error document.
type errorEnvelope struct {
	XMLName xml.Name `xml:"ErrorResponse"`
	Xmlns   string   `xml:"xmlns,attr"`
	Error   struct {
		Type    string `xml:"Type"`
		Code    string `xml:"Code"`
		Message string `xml:"Message"`
	} `xml:"Error"`
	RequestID string `xml:"RequestId"`
}

// apiError is an error the API answers with: the HTTP status, the error code and the message.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.code + ": " + e.message }

func validation(format string, args ...any) *apiError {
	return &apiError{http.StatusBadRequest, "ValidationError", fmt.Sprintf(format, args...)}
}

func notFound(arn string) *apiError {
	return &apiError{http.StatusBadRequest, "TargetGroupNotFound",
		fmt.Sprintf("Target groups '%s' not found", arn)}
}

func writeResult(w http.ResponseWriter, reqID, action string, result any) {
	body, err := xml.Marshal(envelope{
		XMLName: xml.Name{Local: action + "Response"}, Xmlns: Namespace, Result: result, RequestID: reqID,
	})
	if err != nil {
		writeError(w, reqID, &apiError{http.StatusInternalServerError, "InternalFailure", err.Error()})
		return
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}

func writeError(w http.ResponseWriter, reqID string, err error) {
	ae, ok := err.(*apiError)
	if !ok {
		ae = &apiError{http.StatusInternalServerError, "InternalFailure", err.Error()}
	}
	var doc errorEnvelope
	doc.Xmlns = Namespace
	doc.Error.Type = "Sender"
	if ae.status >= 500 {
		doc.Error.Type = "Receiver"
	}
	doc.Error.Code = ae.code
	doc.Error.Message = ae.message
	doc.RequestID = reqID
	body, _ := xml.Marshal(doc)
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(ae.status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
}
