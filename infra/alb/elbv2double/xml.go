package elbv2double

import (
	"encoding/xml"
	"net/http"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
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

// The results of the actions, each the content of its <ActionResult> element (the envelope
// names it). RegisterTargets and DeregisterTargets have an empty result.

// targetGroupsResult is DescribeTargetGroups' and ModifyTargetGroup's result.
type targetGroupsResult struct {
	TargetGroups []xmlTargetGroup `xml:"TargetGroups>member"`
}

// attributesResult is DescribeTargetGroupAttributes' and ModifyTargetGroupAttributes' result.
type attributesResult struct {
	Attributes []xmlAttribute `xml:"Attributes>member"`
}

type describeTargetHealthResult struct {
	TargetHealthDescriptions []xmlTargetHealthDescription `xml:"TargetHealthDescriptions>member"`
}

// envelope is <ActionResponse xmlns=…><ActionResult>…</ActionResult><ResponseMetadata>….
type envelope struct {
	XMLName   xml.Name
	Xmlns     string `xml:"xmlns,attr"`
	Result    actionResult
	RequestID string `xml:"ResponseMetadata>RequestId"`
}

// actionResult is an action's result as the element <ActionResult>.
type actionResult struct {
	action string
	body   any
}

// MarshalXML writes r.body as the element named after the action.
func (r actionResult) MarshalXML(e *xml.Encoder, _ xml.StartElement) error {
	return e.EncodeElement(r.body, xml.StartElement{Name: xml.Name{Local: r.action + "Result"}})
}

func validation(format string, args ...any) *awsdouble.Error {
	return awsdouble.Errorf(http.StatusBadRequest, "ValidationError", format, args...)
}

func notFound(arn string) *awsdouble.Error {
	return awsdouble.Errorf(http.StatusBadRequest, "TargetGroupNotFound", "Target groups '%s' not found", arn)
}
