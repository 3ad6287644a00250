package smdouble_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"github.com/zero502/zero502/infra/secrets/secretsmanager/smdouble"
)

const auth = "AWS4-HMAC-SHA256 Credential=AKIDTEST/20261130/eu-west-1/secretsmanager/aws4_request, " +
	"SignedHeaders=content-type;host;x-amz-date;x-amz-target, Signature=0000"

// call sends one raw awsJson1.1 request as the SDK does and returns the answer's status, its
// x-amzn-ErrorType header and its body decoded; the test fails unless the answer is that JSON.
func call(t *testing.T, d *smdouble.Double, target, body string, header http.Header) (int, string, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, d.URL+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", smdouble.ContentType)
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Authorization", auth)
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if ct := resp.Header.Get("Content-Type"); ct != smdouble.ContentType {
		t.Fatalf("answer Content-Type %q, want %s", ct, smdouble.ContentType)
	}
	if id := resp.Header.Get("x-amzn-RequestId"); len(id) != 36 {
		t.Fatalf("x-amzn-RequestId %q", id)
	}
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("answer %q is not a JSON object: %v", b, err)
	}
	return resp.StatusCode, resp.Header.Get("x-amzn-ErrorType"), out
}

// TestTheSDKSendsAwsJSON11 pins what the double was written for: if an SDK upgrade changes
// Secrets Manager's protocol, this fails first.
func TestTheSDKSendsAwsJSON11(t *testing.T) {
	s := smdouble.New(smdouble.Options{})
	s.Put("prod/DB_PASSWORD", "hunter2")
	var mu sync.Mutex
	var seen *http.Request
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen, body = r.Clone(context.Background()), b
		mu.Unlock()
		r.Body = io.NopCloser(strings.NewReader(string(b)))
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d := &smdouble.Double{Server: s, URL: srv.URL}
	out, err := d.Client().GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("prod/DB_PASSWORD")})
	if err != nil {
		t.Fatal(err)
	}
	if aws.ToString(out.SecretString) != "hunter2" || aws.ToString(out.Name) != "prod/DB_PASSWORD" ||
		!strings.HasPrefix(aws.ToString(out.ARN), "arn:aws:secretsmanager:eu-west-1:123456789012:secret:prod/DB_PASSWORD-") ||
		len(aws.ToString(out.VersionId)) != 36 || len(out.VersionStages) != 1 || out.VersionStages[0] != "AWSCURRENT" ||
		out.CreatedDate == nil || time.Since(*out.CreatedDate) > time.Minute {
		t.Fatalf("the SDK read %+v", out)
	}
	mu.Lock()
	defer mu.Unlock()
	h := seen.Header
	if seen.Method != http.MethodPost || seen.URL.Path != "/" || h.Get("X-Amz-Target") != "secretsmanager.GetSecretValue" ||
		h.Get("Content-Type") != "application/x-amz-json-1.1" ||
		!strings.Contains(h.Get("Authorization"), "/eu-west-1/secretsmanager/aws4_request") {
		t.Fatalf("the SDK sent %s %s with %v", seen.Method, seen.URL.Path, h)
	}
	var in map[string]any
	if err := json.Unmarshal(body, &in); err != nil || in["SecretId"] != "prod/DB_PASSWORD" {
		t.Fatalf("the SDK sent the body %q (%v)", body, err)
	}
}

func TestAMissingSecretIsResourceNotFound(t *testing.T) {
	d := smdouble.Start(t)
	status, typ, out := call(t, d, "secretsmanager.GetSecretValue", `{"SecretId":"nope"}`, nil)
	if status != 400 || typ != "ResourceNotFoundException" || out["__type"] != "ResourceNotFoundException" ||
		out["message"] != smdouble.NotFoundMessage {
		t.Fatalf("status %d, x-amzn-ErrorType %q, body %v", status, typ, out)
	}
	_, err := d.Client().GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("nope")})
	var nf *types.ResourceNotFoundException
	if !errors.As(err, &nf) || nf.ErrorMessage() != smdouble.NotFoundMessage {
		t.Fatalf("the SDK read %v, want ResourceNotFoundException", err)
	}
}

func TestRequestsMustBeSignedForSecretsManagerInItsRegion(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("a", "v")
	for _, c := range []struct {
		name, auth, code string
	}{
		{"unsigned", "", "MissingAuthenticationTokenException"},
		{"not SigV4", "Bearer x", "IncompleteSignatureException"},
		{"another service", strings.Replace(auth, "/secretsmanager/", "/monitoring/", 1), "IncompleteSignatureException"},
		{"another region", strings.Replace(auth, "/eu-west-1/", "/us-east-1/", 1), "InvalidSignatureException"},
	} {
		h := http.Header{"Authorization": {c.auth}}
		if c.auth == "" {
			h = http.Header{"Authorization": nil}
		}
		status, typ, out := call(t, d, "secretsmanager.GetSecretValue", `{"SecretId":"a"}`, h)
		if status != 400 || typ != c.code || out["__type"] != c.code || out["SecretString"] != nil {
			t.Errorf("%s: status %d, x-amzn-ErrorType %q, body %v; want 400 %s", c.name, status, typ, out, c.code)
		}
	}
	_, err := d.Client(func(o *secretsmanager.Options) { o.Region = "eu-central-1" }).GetSecretValue(context.Background(),
		&secretsmanager.GetSecretValueInput{SecretId: aws.String("a")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidSignatureException" {
		t.Fatalf("a client of another region: %v", err)
	}
	_, err = d.Client(func(o *secretsmanager.Options) { o.Credentials = aws.AnonymousCredentials{} }).GetSecretValue(context.Background(),
		&secretsmanager.GetSecretValueInput{SecretId: aws.String("a")})
	if !errors.As(err, &ae) || ae.ErrorCode() != "MissingAuthenticationTokenException" {
		t.Fatalf("an anonymous client: %v", err)
	}
}

func TestOtherOperationsAndBadRequestsAreRefused(t *testing.T) {
	d := smdouble.Start(t)
	for _, c := range []struct {
		target, body, code string
		header             http.Header
	}{
		{"secretsmanager.ListSecrets", `{}`, "UnknownOperationException", nil},
		{"dynamodb.GetItem", `{}`, "UnknownOperationException", nil},
		{"secretsmanager.GetSecretValue", `{"SecretId":`, "SerializationException", nil},
		{"secretsmanager.GetSecretValue", `{}`, "ValidationException", nil},
		{"secretsmanager.GetSecretValue", `{"SecretId":"a"}`, "SerializationException", http.Header{"Content-Type": {"application/json"}}},
	} {
		status, typ, out := call(t, d, c.target, c.body, c.header)
		if status != 400 || typ != c.code || out["__type"] != c.code {
			t.Errorf("%s %s: status %d, x-amzn-ErrorType %q, body %v; want 400 %s", c.target, c.body, status, typ, out, c.code)
		}
	}
}

func TestSecretsByNameOrARNCurrentVersionOnly(t *testing.T) {
	d := smdouble.Start(t)
	arn := d.Put("app/KEY", "one")
	d.Put("app/KEY", "two") // a new current version, the same secret
	if again := d.Put("app/KEY", "two"); again != arn {
		t.Fatalf("ARN changed from %s to %s", arn, again)
	}
	d.PutBinary("app/CERT", []byte{0, 1, 2, 0xff})
	api := d.Client()
	get := func(in *secretsmanager.GetSecretValueInput) (*secretsmanager.GetSecretValueOutput, error) {
		return api.GetSecretValue(context.Background(), in)
	}
	for _, id := range []string{"app/KEY", arn} {
		out, err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
		if err != nil || aws.ToString(out.SecretString) != "two" || out.SecretBinary != nil {
			t.Fatalf("%s: %+v, %v", id, out, err)
		}
		if _, err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String(id), VersionId: out.VersionId}); err != nil {
			t.Fatalf("%s at its current VersionId: %v", id, err)
		}
	}
	out, err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("app/CERT")})
	if err != nil || out.SecretString != nil || string(out.SecretBinary) != "\x00\x01\x02\xff" {
		t.Fatalf("binary secret: %+v, %v", out, err)
	}
	var nf *types.ResourceNotFoundException
	if _, err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("app/KEY"), VersionStage: aws.String("AWSPREVIOUS")}); !errors.As(err, &nf) {
		t.Fatalf("AWSPREVIOUS: %v, want ResourceNotFoundException", err)
	}
	d.Delete("app/KEY")
	var ir *types.InvalidRequestException
	if _, err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("app/KEY")}); !errors.As(err, &ir) {
		t.Fatalf("a secret marked for deletion: %v, want InvalidRequestException", err)
	}
	d.Remove("app/KEY")
	if _, err := get(&secretsmanager.GetSecretValueInput{SecretId: aws.String("app/KEY")}); !errors.As(err, &nf) {
		t.Fatalf("a removed secret: %v, want ResourceNotFoundException", err)
	}
}

func TestFailuresAndCallCounts(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("a", "v")
	d.Put("b", "w")
	d.Fail("a", 500, "InternalServiceError", "An error occurred on the server side.")
	// Three attempts without back-off: the double counts the two retries apart.
	api := d.Client(func(o *secretsmanager.Options) {
		o.RetryMaxAttempts = 0
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.Backoff = retry.BackoffDelayerFunc(func(int, error) (time.Duration, error) { return 0, nil })
		})
	})
	_, err := api.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("a")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InternalServiceError" {
		t.Fatalf("a failing secret: %v", err)
	}
	if c, i := d.Calls("GetSecretValue"), d.Invocations("GetSecretValue"); c != 3 || i != 1 {
		t.Fatalf("calls %d, invocations %d; want 3 and 1", c, i)
	}
	if _, err := api.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("b")}); err != nil {
		t.Fatalf("another secret: %v", err)
	}
	d.Fail("", 400, "AccessDeniedException", "not authorized to perform: secretsmanager:GetSecretValue")
	if _, err := api.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("b")}); !errors.As(err, &ae) ||
		ae.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("every call failing: %v", err)
	}
	d.Fail("", 0, "", "")
	d.Fail("a", 0, "", "")
	if _, err := api.GetSecretValue(context.Background(), &secretsmanager.GetSecretValueInput{SecretId: aws.String("a")}); err != nil {
		t.Fatalf("after the failures were lifted: %v", err)
	}
	if n := d.TotalCalls(); n != 6 {
		t.Fatalf("total calls %d, want 6", n)
	}
}
