// Package awsdouble is what the tests' AWS API doubles share of the AWS wire, whatever their
// protocol: infra/alb/elbv2double speaks ELBv2's Query protocol and
// infra/dnsset/route53double Route 53's REST-XML, and both answer with request IDs
// (x-amzn-RequestId), require a SigV4 Authorization header for their service, answer errors
// with the XML ErrorResponse document (Error/Type/Code/Message and RequestId), count their calls
// by operation, and write XML bodies as text/xml. Those pieces live here once; each double keeps
// only its protocol: its routing, its envelopes, its operations and its own error codes.
// infra/alarms/cloudwatchdouble speaks Smithy RPC v2 CBOR, so it takes the protocol-neutral
// pieces (Error, NewRequestID, Authenticate, Calls) and writes its own CBOR answers and errors.
//
// For the doubles' own tests it has Call, one raw request that insists on an XML answer.
package awsdouble

import (
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Error is an error the API answers with: the HTTP status, the error code and the message, as
// the ErrorResponse document carries them.
type Error struct {
	Status  int
	Code    string
	Message string
}

// Errorf returns the API error with status and code whose message is format with args.
func Errorf(status int, code, format string, args ...any) *Error {
	return &Error{Status: status, Code: code, Message: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string { return e.Code + ": " + e.Message }

// NewRequestID makes a request ID in AWS's shape (a random UUID-like 8-4-4-4-12 hex string),
// sets it as w's x-amzn-RequestId header and returns it for the response document.
func NewRequestID(w http.ResponseWriter) string {
	b, c := rand.Uint64(), rand.Uint64()
	id := fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(b>>32), uint16(b>>16), uint16(b), uint16(c>>48), c&0xffffffffffff)
	w.Header().Set("x-amzn-RequestId", id)
	return id
}

// Authenticate requires r to carry a SigV4 Authorization header whose credential scope is for
// service, and returns the scope's signing region. The signature itself is not verified: a
// double has no secret to check it with. missing is the protocol's own answer to an unsigned
// request (its code and message differ between protocols); a header that is not SigV4, or is
// for another service, is answered with IncompleteSignature.
func Authenticate(r *http.Request, service string, missing *Error) (region string, err error) {
	auth := r.Header.Get("Authorization")
	if auth == "" {
		return "", missing
	}
	const prefix = "AWS4-HMAC-SHA256 Credential="
	if !strings.HasPrefix(auth, prefix) {
		return "", Errorf(http.StatusForbidden, "IncompleteSignature", "Authorization header is not AWS Signature Version 4")
	}
	cred, _, _ := strings.Cut(strings.TrimPrefix(auth, prefix), ",")
	parts := strings.Split(cred, "/") // AKID/date/region/service/aws4_request
	if len(parts) != 5 || parts[3] != service || parts[4] != "aws4_request" {
		return "", Errorf(http.StatusForbidden, "IncompleteSignature",
			"credential scope %q is not for service %s", cred, service)
	}
	return parts[2], nil
}

// WriteXML answers with status and doc, marshalled after the XML declaration, as text/xml. When
// doc does not marshal it writes nothing and returns the error, for the caller to answer it.
func WriteXML(w http.ResponseWriter, status int, doc any) error {
	body, err := xml.Marshal(doc)
	if err != nil {
		return fmt.Errorf("awsdouble: marshal the %T answer: %w", doc, err)
	}
	w.Header().Set("Content-Type", "text/xml")
	w.WriteHeader(status)
	_, _ = w.Write([]byte(xml.Header))
	_, _ = w.Write(body)
	return nil
}

// errorResponse is the ErrorResponse document of the Query and REST-XML protocols.
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

// WriteError answers err as the ErrorResponse document in the XML namespace ns: an *Error with
// its status, code and message, any other error as a 500 InternalFailure. The error's Type is
// Sender for a 4xx status (the caller's fault) and Receiver for a 5xx one.
func WriteError(w http.ResponseWriter, ns, reqID string, err error) {
	ae, ok := err.(*Error)
	if !ok {
		ae = Errorf(http.StatusInternalServerError, "InternalFailure", "%s", err.Error())
	}
	var doc errorResponse
	doc.Xmlns = ns
	doc.Error.Type = "Sender"
	if ae.Status >= 500 {
		doc.Error.Type = "Receiver"
	}
	doc.Error.Code, doc.Error.Message, doc.RequestID = ae.Code, ae.Message, reqID
	_ = WriteXML(w, ae.Status, doc) // plain strings: it always marshals
}

// Calls counts a double's requests by operation (answered successfully or not), so that tests
// can prove that a wait polled or that a second run changed nothing. The zero value is ready;
// it is safe for concurrent use.
type Calls struct {
	mu sync.Mutex
	n  map[string]int
}

// Add counts one request of operation.
func (c *Calls) Add(operation string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[operation]++
}

// Of is how many requests of the operations named there were, together.
func (c *Calls) Of(operations ...string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, op := range operations {
		n += c.n[op]
	}
	return n
}

// Total is how many requests there were, of any operation.
func (c *Calls) Total() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, k := range c.n {
		n += k
	}
	return n
}

// Call sends one raw request with client, as an SDK would, and returns the answer's status and
// body. The test fails when the request cannot be sent or the answer is not text/xml: every
// answer of an AWS XML protocol, error or not, is.
func Call(t testing.TB, client *http.Client, req *http.Request) (status int, body string) {
	t.Helper()
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("awsdouble: %s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != "text/xml" {
		t.Fatalf("Content-Type %q, want text/xml", ct)
	}
	return resp.StatusCode, string(b)
}

// Silent is the URL of an endpoint that takes every request and answers none until the test
// ends: an AWS endpoint behind a broken proxy, or a connection left half-open.
func Silent(t testing.TB) string {
	t.Helper()
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(release) }) // runs first: the requests end, then the server closes
	return srv.URL
}

// OfflineSDK points the SDK's default chain, for the rest of the test, at static test
// credentials and at no file, profile, region or instance metadata of the machine's.
func OfflineSDK(t testing.TB) {
	t.Helper()
	none := filepath.Join(t.TempDir(), "none")
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": "AKIDTEST", "AWS_SECRET_ACCESS_KEY": "test-secret", "AWS_SESSION_TOKEN": "",
		"AWS_PROFILE": "", "AWS_CONFIG_FILE": none, "AWS_SHARED_CREDENTIALS_FILE": none,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
	} {
		t.Setenv(k, v)
	}
}
