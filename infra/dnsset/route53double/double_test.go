package route53double_test

import (
	"encoding/xml"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/dnsset/route53double"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

const auth = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261201/us-east-1/route53/aws4_request, " +
	"SignedHeaders=host;x-amz-date, Signature=0000"

// call sends one raw REST-XML request, as the SDK does.
func call(t *testing.T, srv *httptest.Server, method, path, body string, signed bool) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if signed {
		req.Header.Set("Authorization", auth)
	}
	return awsdouble.Call(t, srv.Client(), req)
}

func start(t *testing.T) (*route53double.Server, *httptest.Server, string) {
	t.Helper()
	d := route53double.New(route53double.Options{})
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	return d, srv, d.AddHostedZone("example.test")
}

const upsert = `<?xml version="1.0" encoding="UTF-8"?>
<ChangeResourceRecordSetsRequest xmlns="https://route53.amazonaws.com/doc/2013-04-01/"><ChangeBatch><Changes>
<Change><Action>ACTION</Action><ResourceRecordSet><Name>edge.example.test</Name><Type>A</Type>
<SetIdentifier>192.0.2.1</SetIdentifier><MultiValueAnswer>true</MultiValueAnswer><TTL>60</TTL>
<ResourceRecords><ResourceRecord><Value>192.0.2.1</Value></ResourceRecord></ResourceRecords>
</ResourceRecordSet></Change></Changes></ChangeBatch></ChangeResourceRecordSetsRequest>`

func TestAnUnsignedRequestIsForbidden(t *testing.T) {
	_, srv, zone := start(t)
	status, body := call(t, srv, http.MethodGet, "/2013-04-01/hostedzone/"+zone+"/rrset", "", false)
	var doc struct {
		XMLName xml.Name `xml:"ErrorResponse"`
		Code    string   `xml:"Error>Code"`
		ReqID   string   `xml:"RequestId"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil || status != http.StatusForbidden ||
		doc.Code != "MissingAuthenticationTokenException" || doc.ReqID == "" {
		t.Fatalf("unsigned: %d %s (%v)", status, body, err)
	}
}

func TestAChangeAnswersChangeInfoAndARefusedOneTheInvalidChangeBatchDocument(t *testing.T) {
	d, srv, zone := start(t)
	status, body := call(t, srv, http.MethodPost, "/2013-04-01/hostedzone/"+zone+"/rrset",
		strings.Replace(upsert, "ACTION", "CREATE", 1), true)
	var ok struct {
		XMLName xml.Name `xml:"https://route53.amazonaws.com/doc/2013-04-01/ ChangeResourceRecordSetsResponse"`
		ID      string   `xml:"ChangeInfo>Id"`
		Status  string   `xml:"ChangeInfo>Status"`
	}
	if err := xml.Unmarshal([]byte(body), &ok); err != nil || status != 200 || ok.Status != "PENDING" ||
		!strings.HasPrefix(ok.ID, "/change/C") {
		t.Fatalf("CREATE: %d %s (%v)", status, body, err)
	}
	status, body = call(t, srv, http.MethodGet, "/2013-04-01"+ok.ID, "", true)
	if status != 200 || !strings.Contains(body, "<Status>INSYNC</Status>") {
		t.Fatalf("GetChange with no propagation delay: %d %s", status, body)
	}
	status, body = call(t, srv, http.MethodPost, "/2013-04-01/hostedzone/"+zone+"/rrset",
		strings.Replace(upsert, "ACTION", "CREATE", 1), true)
	var bad struct {
		XMLName  xml.Name `xml:"InvalidChangeBatch"`
		Messages []string `xml:"Messages>Message"`
	}
	if err := xml.Unmarshal([]byte(body), &bad); err != nil || status != http.StatusBadRequest || len(bad.Messages) != 1 ||
		!strings.Contains(bad.Messages[0], "but it already exists") {
		t.Fatalf("second CREATE: %d %s (%v)", status, body, err)
	}
	if got := len(d.RecordSets(zone)); got != 3 { // NS, SOA and the one A record
		t.Fatalf("%d record sets, want 3", got)
	}
}

func TestAnUnknownPathIsNotFound(t *testing.T) {
	_, srv, _ := start(t)
	if status, body := call(t, srv, http.MethodGet, "/2013-04-01/healthcheck", "", true); status != http.StatusNotFound ||
		!strings.Contains(body, "UnknownOperationException") {
		t.Fatalf("unknown path: %d %s", status, body)
	}
}
