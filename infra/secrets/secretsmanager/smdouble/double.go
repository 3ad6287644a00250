// Package smdouble is a local stand-in for the AWS Secrets Manager API, for tests only: no AWS is
// reachable from where zero502 is built, so the real aws-sdk-go-v2 Secrets Manager client is
// pointed (BaseEndpoint) at this double instead. It speaks the wire protocol that client
// (service/secretsmanager v1.51.x) really sends, awsJson1.1: a call is POST / with the headers
// X-Amz-Target: secretsmanager.{Operation} and Content-Type: application/x-amz-json-1.1, its input
// a JSON object; the answer is a JSON object of the same content type (timestamps as epoch
// seconds, blobs as base64), and an error is the JSON object {"__type": code, "message": text}
// with the code also in the x-amzn-ErrorType header, as Secrets Manager answers. Requests must
// carry a SigV4 Authorization header scoped to service secretsmanager and to the double's region.
//
// It implements GetSecretValue, the one call zero502 makes (package infra/secrets/secretsmanager):
// SecretId is a secret's name or the ARN the double gave it, and only the current version
// (VersionStage AWSCURRENT, or the current VersionId) is kept. A secret it does not hold is
// ResourceNotFoundException (HTTP 400), one marked for deletion InvalidRequestException, as
// Secrets Manager answers. Tests put secrets directly (Put, PutBinary), make calls fail (Fail)
// and count them by operation. What it shares with the other AWS doubles (request IDs, the SigV4
// scope check, call counts) is internal/testrig/awsdouble; this package keeps the JSON protocol.
package smdouble

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"mime"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// signingName is the SigV4 service name of Secrets Manager, and targetPrefix what X-Amz-Target
// names an operation after ("secretsmanager.GetSecretValue").
const (
	signingName  = "secretsmanager"
	targetPrefix = "secretsmanager."
)

// ContentType is the media type of every request and answer body.
const ContentType = "application/x-amz-json-1.1"

// Region is the double's default region, and Account the account in its ARNs.
const (
	Region  = "eu-west-1"
	Account = "123456789012"
)

// AccessKeyID and SecretAccessKey are the static test credentials Client signs with.
const (
	AccessKeyID     = "AKIDZERO502TEST"
	SecretAccessKey = "not-a-secret"
)

// NotFoundMessage is Secrets Manager's message for a secret it does not hold.
const NotFoundMessage = "Secrets Manager can't find the specified secret."

// Options configure a Server.
type Options struct {
	// Region is the region the double serves: requests signed for another are refused, and it
	// goes into the secrets' ARNs. Default eu-west-1.
	Region string
}

// secret is one secret as the double holds it: its current version only.
type secret struct {
	name, arn, versionID string
	str                  *string
	bin                  []byte
	created              time.Time
	deleted              bool
}

// failure is an error the double answers instead of a secret's value.
type failure struct {
	status        int
	code, message string
}

// Server is the Secrets Manager API double; it is an http.Handler (use it with
// httptest.NewServer, or Start).
type Server struct {
	region  string
	calls   awsdouble.Calls // by operation
	retries awsdouble.Calls // the calls that were an SDK's retry of an earlier one, by operation

	mu      sync.Mutex
	secrets map[string]*secret // by name
	fail    map[string]failure // by SecretId as sent; "" for every call
}

// New returns a double without secrets; add them with Put.
func New(opts Options) *Server {
	if opts.Region == "" {
		opts.Region = Region
	}
	return &Server{region: opts.Region, secrets: map[string]*secret{}, fail: map[string]failure{}}
}

// Region is the region the double serves.
func (s *Server) Region() string { return s.region }

// Put creates the secret name with value as its SecretString, or gives it a new current version
// with that value, as CreateSecret or PutSecretValue would. It returns the secret's ARN.
func (s *Server) Put(name, value string) string {
	return s.put(name, &value, nil)
}

// PutBinary is Put of a SecretBinary value.
func (s *Server) PutBinary(name string, value []byte) string {
	return s.put(name, nil, append([]byte{}, value...))
}

func (s *Server) put(name string, str *string, bin []byte) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	sec, ok := s.secrets[name]
	if !ok {
		// Secrets Manager's ARNs end in the name, a dash and six random characters.
		const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
		suffix := make([]byte, 6)
		for i := range suffix {
			suffix[i] = letters[rand.IntN(len(letters))]
		}
		sec = &secret{name: name, created: time.Now(),
			arn: fmt.Sprintf("arn:aws:secretsmanager:%s:%s:secret:%s-%s", s.region, Account, name, suffix)}
		s.secrets[name] = sec
	}
	sec.str, sec.bin, sec.versionID, sec.deleted = str, bin, uuid(), false
	return sec.arn
}

// Delete marks the secret name for deletion, as DeleteSecret with a recovery window does: it is
// still there, but GetSecretValue of it is refused with InvalidRequestException.
func (s *Server) Delete(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sec, ok := s.secrets[name]; ok {
		sec.deleted = true
	}
}

// Remove takes the secret name away altogether (ResourceNotFoundException from then on).
func (s *Server) Remove(name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.secrets, name)
}

// Fail makes every GetSecretValue whose SecretId is secretID ("" for every call) answer the
// error code with HTTP status and message instead, e.g. 500 InternalServiceError or 400
// AccessDeniedException; status 0 lifts it. A failure for the SecretId itself wins over the one
// for every call.
func (s *Server) Fail(secretID string, status int, code, message string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if status == 0 {
		delete(s.fail, secretID)
		return
	}
	s.fail[secretID] = failure{status: status, code: code, message: message}
}

// Calls is how many requests of operation (e.g. "GetSecretValue") the double answered,
// successfully or not.
func (s *Server) Calls(operation string) int { return s.calls.Of(operation) }

// Invocations is Calls less the SDK's retries (an attempt after the first of one invocation):
// how many requests of operation the caller made.
func (s *Server) Invocations(operation string) int {
	return s.calls.Of(operation) - s.retries.Of(operation)
}

// TotalCalls is how many API requests the double has received, of any operation.
func (s *Server) TotalCalls() int { return s.calls.Total() }

// retry says r is a retry: the SDK numbers each invocation's attempts in its amz-sdk-request
// header ("attempt=2; max=3").
func retry(r *http.Request) bool {
	for _, f := range strings.Split(r.Header.Get("amz-sdk-request"), ";") {
		if n, ok := strings.CutPrefix(strings.TrimSpace(f), "attempt="); ok && n != "1" {
			return true
		}
	}
	return false
}

// ServeHTTP answers one awsJson1.1 request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	awsdouble.NewRequestID(w)
	out, err := s.serve(r)
	if err != nil {
		writeError(w, err)
		return
	}
	writeJSON(w, http.StatusOK, out)
}

// serve answers r with its result, or returns the error to answer instead.
func (s *Server) serve(r *http.Request) (any, error) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, targetPrefix)
	if r.Method != http.MethodPost || r.URL.Path != "/" || !ok || op == "" {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "UnknownOperationException",
			"no Secrets Manager operation at %s %s with X-Amz-Target %q (awsJson1.1 calls are POST / with X-Amz-Target: %s{Operation})",
			r.Method, r.URL.Path, target, targetPrefix)
	}
	s.calls.Add(op)
	if retry(r) {
		s.retries.Add(op)
	}
	region, err := awsdouble.Authenticate(r, signingName, awsdouble.Errorf(http.StatusBadRequest,
		"MissingAuthenticationTokenException", "Missing Authentication Token"))
	if err != nil {
		if ae, ok := err.(*awsdouble.Error); ok && ae.Code == "IncompleteSignature" {
			// The JSON protocols' name and status for it.
			return nil, awsdouble.Errorf(http.StatusBadRequest, "IncompleteSignatureException", "%s", ae.Message)
		}
		return nil, err
	}
	if region != s.region {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "InvalidSignatureException",
			"Credential should be scoped to a valid region, not '%s'. This endpoint serves %s.", region, s.region)
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != ContentType {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "SerializationException",
			"Content-Type %q, want %s", r.Header.Get("Content-Type"), ContentType)
	}
	switch op {
	case "GetSecretValue":
		var in getSecretValueInput
		if err := readInput(r, &in); err != nil {
			return nil, err
		}
		return s.getSecretValue(in)
	default:
		return nil, awsdouble.Errorf(http.StatusBadRequest, "UnknownOperationException",
			"the double implements GetSecretValue only, not %s", op)
	}
}

// readInput decodes r's JSON body into in; an empty body is an empty input.
func readInput(r *http.Request, in any) error {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return awsdouble.Errorf(http.StatusBadRequest, "SerializationException", "reading the body: %v", err)
	}
	if len(body) == 0 {
		return nil
	}
	if err := json.Unmarshal(body, in); err != nil {
		return awsdouble.Errorf(http.StatusBadRequest, "SerializationException", "the body is not the operation's JSON input: %v", err)
	}
	return nil
}

type getSecretValueInput struct {
	SecretID     string `json:"SecretId"`
	VersionID    string `json:"VersionId"`
	VersionStage string `json:"VersionStage"`
}

type getSecretValueOutput struct {
	ARN           string   `json:"ARN"`
	Name          string   `json:"Name"`
	VersionID     string   `json:"VersionId"`
	SecretString  *string  `json:"SecretString,omitempty"`
	SecretBinary  []byte   `json:"SecretBinary,omitempty"` // base64, as encoding/json writes []byte
	VersionStages []string `json:"VersionStages"`
	CreatedDate   float64  `json:"CreatedDate"` // epoch seconds
}

// getSecretValue answers GetSecretValue.
func (s *Server) getSecretValue(in getSecretValueInput) (any, error) {
	if in.SecretID == "" {
		return nil, validation("1 validation error detected: Value null at 'secretId' failed to satisfy constraint: Member must not be null")
	}
	if len(in.SecretID) > 2048 {
		return nil, validation("1 validation error detected: Value at 'secretId' failed to satisfy constraint: " +
			"Member must have length less than or equal to 2048")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, ok := s.fail[in.SecretID]; ok {
		return nil, awsdouble.Errorf(f.status, f.code, "%s", f.message)
	}
	if f, ok := s.fail[""]; ok {
		return nil, awsdouble.Errorf(f.status, f.code, "%s", f.message)
	}
	sec := s.secrets[in.SecretID]
	if sec == nil {
		for _, x := range s.secrets {
			if x.arn == in.SecretID {
				sec = x
			}
		}
	}
	if sec == nil {
		return nil, notFound(NotFoundMessage)
	}
	if sec.deleted {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "InvalidRequestException",
			"You can't perform this operation on the secret because it was marked for deletion.")
	}
	if in.VersionID != "" && in.VersionID != sec.versionID {
		return nil, notFound("Secrets Manager can't find the specified secret value for VersionId: " + in.VersionID)
	}
	if in.VersionStage != "" && in.VersionStage != "AWSCURRENT" {
		return nil, notFound("Secrets Manager can't find the specified secret value for staging label: " + in.VersionStage)
	}
	return getSecretValueOutput{
		ARN: sec.arn, Name: sec.name, VersionID: sec.versionID,
		SecretString: sec.str, SecretBinary: sec.bin,
		VersionStages: []string{"AWSCURRENT"},
		CreatedDate:   float64(sec.created.UnixMilli()) / 1000,
	}, nil
}

// notFound is Secrets Manager's ResourceNotFoundException.
func notFound(message string) error {
	return awsdouble.Errorf(http.StatusBadRequest, "ResourceNotFoundException", "%s", message)
}

// validation is the awsJson protocols' ValidationException.
func validation(message string) error {
	return awsdouble.Errorf(http.StatusBadRequest, "ValidationException", "%s", message)
}

// writeJSON answers with status and doc as awsJson1.1.
func writeJSON(w http.ResponseWriter, status int, doc any) {
	body, err := json.Marshal(doc)
	if err != nil {
		status = http.StatusInternalServerError
		body = fmt.Appendf(nil, `{"__type":"InternalServiceError","message":%q}`, "marshal the answer: "+err.Error())
	}
	w.Header().Set("Content-Type", ContentType)
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError answers err as an awsJson error: an *awsdouble.Error with its status, code and
// message, any other error as a 500 InternalServiceError.
func writeError(w http.ResponseWriter, err error) {
	ae, ok := err.(*awsdouble.Error)
	if !ok {
		ae = awsdouble.Errorf(http.StatusInternalServerError, "InternalServiceError", "%s", err.Error())
	}
	w.Header().Set("x-amzn-ErrorType", ae.Code)
	writeJSON(w, ae.Status, map[string]string{"__type": ae.Code, "message": ae.Message})
}

// uuid is a random version 4 UUID, the shape of a VersionId.
func uuid() string {
	b, c := rand.Uint64(), rand.Uint64()
	b = b&^0xf000 | 0x4000           // version 4
	c = c&^(0xc000<<48) | 0x8000<<48 // RFC 4122 variant
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x", uint32(b>>32), uint16(b>>16), uint16(b), uint16(c>>48), c&0xffffffffffff)
}

// Double is a running Secrets Manager double on loopback.
type Double struct {
	*Server
	URL string // the double's endpoint (http://127.0.0.1:port)
}

// Start starts a double serving Region until the test ends.
func Start(t testing.TB) *Double {
	t.Helper()
	s := New(Options{})
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return &Double{Server: s, URL: srv.URL}
}

// Client is the real SDK client for the double: its region, BaseEndpoint its URL, static test
// credentials (nothing of the machine's AWS configuration is read), and one attempt per call, so
// that a failure the test set up is not retried with back-off; optFns may change any of it.
func (d *Double) Client(optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.New(secretsmanager.Options{
		Region:           d.region,
		BaseEndpoint:     aws.String(d.URL),
		Credentials:      credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
		RetryMaxAttempts: 1,
	}, optFns...)
}
