package awsdouble

import (
	"encoding/xml"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

func TestAuthenticateReadsTheSigV4ScopeOfTheService(t *testing.T) {
	missing := Errorf(http.StatusForbidden, "Missing", "unsigned")
	for _, tc := range []struct {
		name, auth, region, code string
	}{
		{"unsigned", "", "", "Missing"},
		{"not SigV4", "Basic dXNlcjpwYXNz", "", "IncompleteSignature"},
		{"another service", "AWS4-HMAC-SHA256 Credential=AKID/20261201/eu-west-1/s3/aws4_request, Signature=0", "", "IncompleteSignature"},
		{"signed", "AWS4-HMAC-SHA256 Credential=AKID/20261201/eu-west-1/route53/aws4_request, Signature=0", "eu-west-1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodGet, "/", nil)
			if tc.auth != "" {
				r.Header.Set("Authorization", tc.auth)
			}
			region, err := Authenticate(r, "route53", missing)
			var ae *Error
			switch {
			case tc.code == "" && (err != nil || region != tc.region):
				t.Fatalf("got %q, %v; want region %q", region, err, tc.region)
			case tc.code != "" && (!errors.As(err, &ae) || ae.Code != tc.code || ae.Status != http.StatusForbidden):
				t.Fatalf("got %q, %v; want a 403 %s", region, err, tc.code)
			}
		})
	}
}

func TestWriteErrorAnswersTheErrorResponseDocument(t *testing.T) {
	for _, tc := range []struct {
		err       error
		status    int
		typ, code string
	}{
		{Errorf(http.StatusBadRequest, "ValidationError", "bad %d", 1), 400, "Sender", "ValidationError"},
		{errors.New("boom"), 500, "Receiver", "InternalFailure"},
	} {
		w := httptest.NewRecorder()
		WriteError(w, "urn:ns", "req-1", tc.err)
		var doc struct {
			XMLName xml.Name `xml:"urn:ns ErrorResponse"`
			Type    string   `xml:"Error>Type"`
			Code    string   `xml:"Error>Code"`
			Message string   `xml:"Error>Message"`
			ReqID   string   `xml:"RequestId"`
		}
		if err := xml.Unmarshal(w.Body.Bytes(), &doc); err != nil || w.Code != tc.status ||
			w.Header().Get("Content-Type") != "text/xml" || doc.Type != tc.typ || doc.Code != tc.code ||
			doc.Message == "" || doc.ReqID != "req-1" {
			t.Fatalf("%v: %d %s (%v)", tc.err, w.Code, w.Body, err)
		}
	}
}

func TestCallsCountByOperation(t *testing.T) {
	var c Calls
	c.Add("A")
	c.Add("A")
	c.Add("B")
	if c.Of("A") != 2 || c.Of("A", "B") != 3 || c.Of("C") != 0 || c.Total() != 3 {
		t.Fatalf("A %d, A+B %d, C %d, total %d; want 2, 3, 0, 3", c.Of("A"), c.Of("A", "B"), c.Of("C"), c.Total())
	}
}

func TestNewRequestIDIsSetAsTheHeader(t *testing.T) {
	w := httptest.NewRecorder()
	id := NewRequestID(w)
	if len(id) != 36 || w.Header().Get("x-amzn-RequestId") != id {
		t.Fatalf("id %q, header %q", id, w.Header().Get("x-amzn-RequestId"))
	}
}
