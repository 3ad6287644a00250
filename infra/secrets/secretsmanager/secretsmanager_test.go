package secretsmanager_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/secrets"
	"github.com/zero502/zero502/infra/secrets/secretsmanager"
	"github.com/zero502/zero502/infra/secrets/secretsmanager/smdouble"
)

// values are the secrets' values the tests put: no error text may contain one.
var values = []string{"hunter2-db-password", "sk_live_api_key_42", "binary-cert-bytes"}

func noValueIn(t *testing.T, err error) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(err.Error(), v) || strings.Contains(fmt.Sprintf("%+v", err), v) {
			t.Fatalf("the error carries the value %q: %v", v, err)
		}
	}
}

func TestLookupReadsPrefixPlusName(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("prod/app/DB_PASSWORD", values[0])
	d.Put("prod/app/API_KEY", values[1])
	d.PutBinary("prod/app/CERT", []byte(values[2]))
	d.Put("DB_PASSWORD", "the unprefixed one") // not what prefix+name names
	d.Put("prod/other/API_KEY", "another service's")

	got, err := secretsmanager.Lookup(context.Background(), d.Client(), "prod/app/",
		[]string{"DB_PASSWORD", "API_KEY", "CERT", "DB_PASSWORD"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]secrets.Value{"DB_PASSWORD": secrets.Value(values[0]), "API_KEY": secrets.Value(values[1]), "CERT": secrets.Value(values[2])}
	if len(got) != len(want) {
		t.Fatalf("got %d values (%v), want %d", len(got), keys(got), len(want))
	}
	for n, v := range want {
		if string(got[n]) != string(v) {
			t.Errorf("%s: got a value of %d bytes, want the one put at prod/app/%s", n, len(got[n]), n)
		}
	}
	if n := d.Invocations("GetSecretValue"); n != 3 {
		t.Fatalf("%d GetSecretValue calls, want 3 (a name given twice is read once)", n)
	}
}

func TestLookupWithoutPrefixAndWithoutNames(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("TOKEN", values[1])
	got, err := secretsmanager.Lookup(context.Background(), d.Client(), "", []string{"TOKEN"})
	if err != nil || string(got["TOKEN"]) != values[1] {
		t.Fatalf("got %v (%d values), %v", keys(got), len(got), err)
	}
	got, err = secretsmanager.Lookup(context.Background(), d.Client(), "p/", nil)
	if err != nil || len(got) != 0 || d.Calls("GetSecretValue") != 1 {
		t.Fatalf("no names: %v, %v, %d calls", keys(got), err, d.Calls("GetSecretValue"))
	}
}

func TestANameSecretsManagerLacksIsAbsentWithoutError(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("prod/app/DB_PASSWORD", values[0])
	got, err := secretsmanager.Lookup(context.Background(), d.Client(), "prod/app/", []string{"MISSING", "DB_PASSWORD"})
	if err != nil {
		t.Fatalf("a missing secret is not an error: %v", err)
	}
	if _, ok := got["MISSING"]; ok || len(got) != 1 || string(got["DB_PASSWORD"]) != values[0] {
		t.Fatalf("got %v, want DB_PASSWORD alone", keys(got))
	}
	if n := d.Invocations("GetSecretValue"); n != 2 {
		t.Fatalf("%d calls, want 2", n)
	}
}

func TestAFailureNamesTheSecretIdAndWhatToCheckWithoutAValue(t *testing.T) {
	for _, c := range []struct {
		name   string
		setup  func(d *smdouble.Double)
		code   string
		client func(d *smdouble.Double) *sm.Client
	}{
		{name: "500", code: "InternalServiceError", setup: func(d *smdouble.Double) {
			d.Fail("prod/app/API_KEY", 500, "InternalServiceError", "An error occurred on the server side.")
		}},
		{name: "access denied", code: "AccessDeniedException", setup: func(d *smdouble.Double) {
			d.Fail("prod/app/API_KEY", 400, "AccessDeniedException", "User: arn:aws:iam::123456789012:user/deploy is not "+
				"authorized to perform: secretsmanager:GetSecretValue on resource: prod/app/API_KEY")
		}},
		{name: "marked for deletion", code: "InvalidRequestException", setup: func(d *smdouble.Double) {
			d.Put("prod/app/API_KEY", values[1])
			d.Delete("prod/app/API_KEY")
		}},
		{name: "another region", code: "InvalidSignatureException", client: func(d *smdouble.Double) *sm.Client {
			return d.Client(func(o *sm.Options) { o.Region = "eu-central-1" })
		}},
		{name: "no credentials", code: "MissingAuthenticationTokenException", client: func(d *smdouble.Double) *sm.Client {
			return d.Client(func(o *sm.Options) { o.Credentials = aws.AnonymousCredentials{} })
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := smdouble.Start(t)
			d.Put("prod/app/DB_PASSWORD", values[0])
			if c.setup != nil {
				c.setup(d)
			}
			api := d.Client()
			if c.client != nil {
				api = c.client(d)
			}
			got, err := secretsmanager.Lookup(context.Background(), api, "prod/app/", []string{"DB_PASSWORD", "API_KEY", "CERT"})
			if err == nil {
				t.Fatalf("no error; got %v", keys(got))
			}
			if got != nil {
				t.Fatalf("values with an error: %v", keys(got))
			}
			var ae smithy.APIError
			if !errors.As(err, &ae) || ae.ErrorCode() != c.code {
				t.Fatalf("the SDK's %s is not wrapped: %v", c.code, err)
			}
			id := "prod/app/API_KEY"
			if c.client != nil {
				id = "prod/app/DB_PASSWORD" // every call fails: the first one stops Lookup
			}
			msg := err.Error()
			for _, want := range []string{"secret " + id + " in region ", "credentials", "region", "secretsmanager:GetSecretValue"} {
				if !strings.Contains(msg, want) {
					t.Errorf("the error does not say %q: %s", want, msg)
				}
			}
			noValueIn(t, err)
			if d.Invocations("GetSecretValue") > 2 { // CERT, after API_KEY, is never asked for
				t.Fatalf("Lookup went on after the failure: %d calls", d.Invocations("GetSecretValue"))
			}
		})
	}
}

// TestAnUnreadableAnswerIsNotQuoted: the SDK's error for an answer it cannot parse may quote
// the answer (here a string where the timestamp CreatedDate belongs, the value by mistake);
// Lookup's error withholds that text, yet still wraps the SDK's error.
func TestAnUnreadableAnswerIsNotQuoted(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", smdouble.ContentType)
		fmt.Fprintf(w, `{"Name":"prod/app/DB_PASSWORD","SecretString":%q,"CreatedDate":%q}`, values[0], values[0])
	}))
	t.Cleanup(srv.Close)
	api := sm.New(sm.Options{Region: "eu-west-1", BaseEndpoint: aws.String(srv.URL), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "test-secret", "")})

	_, raw := api.GetSecretValue(context.Background(), &sm.GetSecretValueInput{SecretId: aws.String("prod/app/DB_PASSWORD")})
	var de *smithy.DeserializationError
	if !errors.As(raw, &de) || !strings.Contains(raw.Error(), values[0]) {
		t.Fatalf("the SDK's own error for the broken answer: %v; want a DeserializationError quoting it", raw)
	}

	_, err := secretsmanager.Lookup(context.Background(), api, "prod/app/", []string{"DB_PASSWORD"})
	if err == nil || !errors.As(err, &de) || !strings.Contains(err.Error(), "secret prod/app/DB_PASSWORD in region eu-west-1") {
		t.Fatalf("Lookup: %v", err)
	}
	noValueIn(t, err)
	t.Logf("Lookup's error: %v", err)
}

func TestASecretWithoutAValueIsAnError(t *testing.T) {
	api := apiFunc(func(_ context.Context, in *sm.GetSecretValueInput, _ ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
		return &sm.GetSecretValueOutput{Name: in.SecretId}, nil
	})
	_, err := secretsmanager.Lookup(context.Background(), api, "p/", []string{"EMPTY"})
	if err == nil || !strings.Contains(err.Error(), "secret p/EMPTY has neither SecretString nor SecretBinary") {
		t.Fatalf("got %v", err)
	}
}

func TestAnySDKsNotFoundIsAbsentAndOtherErrorsAreWrapped(t *testing.T) {
	boom := errors.New("connection reset")
	api := apiFunc(func(_ context.Context, in *sm.GetSecretValueInput, _ ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
		switch aws.ToString(in.SecretId) {
		case "GONE":
			return nil, &smithy.OperationError{ServiceID: sm.ServiceID, OperationName: "GetSecretValue",
				Err: &types.ResourceNotFoundException{Message: aws.String(smdouble.NotFoundMessage)}}
		case "DOWN":
			return nil, boom
		}
		return &sm.GetSecretValueOutput{SecretString: aws.String(values[0])}, nil
	})
	got, err := secretsmanager.Lookup(context.Background(), api, "", []string{"GONE", "HERE"})
	if err != nil || len(got) != 1 || string(got["HERE"]) != values[0] {
		t.Fatalf("got %v, %v", keys(got), err)
	}
	_, err = secretsmanager.Lookup(context.Background(), api, "", []string{"HERE", "DOWN"})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "secret DOWN:") {
		t.Fatalf("got %v, want it wrapping %v", err, boom)
	}
	noValueIn(t, err)
}

// TestNewClientReadsTheDefaultChain builds the client as a deploy does, from the environment
// alone (static keys, the endpoint the SDK's AWS_ENDPOINT_URL_SECRETS_MANAGER names), nothing
// of the machine's own AWS configuration.
func TestNewClientReadsTheDefaultChain(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("prod/app/DB_PASSWORD", values[0])
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": smdouble.AccessKeyID, "AWS_SECRET_ACCESS_KEY": smdouble.SecretAccessKey, "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_WEB_IDENTITY_TOKEN_FILE": "", "AWS_ROLE_ARN": "",
		"AWS_CONTAINER_CREDENTIALS_FULL_URI": "", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI": "",
		"AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SECRETS_MANAGER": d.URL, "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS": "",
	} {
		t.Setenv(k, v)
	}
	ctx := context.Background()

	if _, err := secretsmanager.NewClient(ctx, ""); err == nil || !strings.Contains(err.Error(), "no AWS region") {
		t.Fatalf("without a region: %v", err)
	}
	api, err := secretsmanager.NewClient(ctx, smdouble.Region)
	if err != nil {
		t.Fatal(err)
	}
	got, err := secretsmanager.Lookup(ctx, api, "prod/app/", []string{"DB_PASSWORD", "MISSING"})
	if err != nil || len(got) != 1 || string(got["DB_PASSWORD"]) != values[0] {
		t.Fatalf("got %v, %v", keys(got), err)
	}

	t.Setenv("AWS_REGION", smdouble.Region)
	if api, err = secretsmanager.NewClient(ctx, ""); err != nil || api.Options().Region != smdouble.Region {
		t.Fatalf("the region from AWS_REGION: %v", err)
	}
	api, err = secretsmanager.NewClient(ctx, "us-east-1") // the double serves eu-west-1 alone
	if err != nil {
		t.Fatal(err)
	}
	_, err = secretsmanager.Lookup(ctx, api, "prod/app/", []string{"DB_PASSWORD"})
	if err == nil || !strings.Contains(err.Error(), "secret prod/app/DB_PASSWORD in region us-east-1") {
		t.Fatalf("a client of the wrong region: %v", err)
	}
	noValueIn(t, err)
}

// TestValuesNeverPrint: what Lookup gives is secrets.Value, which prints as Redacted.
func TestValuesNeverPrint(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("K", values[0])
	got, err := secretsmanager.Lookup(context.Background(), d.Client(), "", []string{"K"})
	if err != nil {
		t.Fatal(err)
	}
	if s := fmt.Sprintf("%v %+v %#v %s", got, got, got, got["K"]); strings.Contains(s, values[0]) {
		t.Fatalf("printed: %s", s)
	}
}

type apiFunc func(context.Context, *sm.GetSecretValueInput, ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)

func (f apiFunc) GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, optFns ...func(*sm.Options)) (*sm.GetSecretValueOutput, error) {
	return f(ctx, in, optFns...)
}

func keys(m map[string]secrets.Value) []string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	return ks
}

// A deploy's config with secrets.aws: each name from secrets.file first, then Secrets Manager
// (prefix+NAME, with the deploy job's credentials from its environment), then the environment.
func TestAConfigsSecretsComeFromTheFileThenSecretsManagerThenTheEnvironment(t *testing.T) {
	d := smdouble.Start(t)
	d.Put("shop/A", "a-from-aws")
	d.Put("shop/B", "b-from-aws")
	dir := t.TempDir()
	for k, v := range map[string]string{
		"AWS_ACCESS_KEY_ID": smdouble.AccessKeyID, "AWS_SECRET_ACCESS_KEY": smdouble.SecretAccessKey, "AWS_SESSION_TOKEN": "",
		"AWS_CONFIG_FILE": filepath.Join(dir, "config"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"),
		"AWS_PROFILE": "", "AWS_DEFAULT_PROFILE": "", "AWS_REGION": "", "AWS_DEFAULT_REGION": "",
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_ENDPOINT_URL": "", "AWS_ENDPOINT_URL_SECRETS_MANAGER": d.URL,
		"B": "b-from-env", "C": "c-from-env",
	} {
		t.Setenv(k, v)
	}
	file := filepath.Join(dir, "secrets.env")
	if err := os.WriteFile(file, []byte("A=a-from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes([]byte(`
rollout: {runtime: process}
secrets: {file: `+file+`, aws: {enabled: true, region: `+smdouble.Region+`, prefix: shop/}}
services:
  - {name: web, command: [sleep, "60"], secrets: [A, B, C]}
hosts: [{name: h1}]
`), "test config")
	if err != nil {
		t.Fatal(err)
	}
	where, err := cfg.ResolveSecrets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	v := cfg.SecretValues
	if string(v["A"]) != "a-from-file" || string(v["B"]) != "b-from-aws" || string(v["C"]) != "c-from-env" {
		t.Fatalf("values %q %q %q: want A from the file, B from Secrets Manager, C from the environment", v["A"], v["B"], v["C"])
	}
	if len(where) != 3 || where[1].Source != "aws secrets manager" {
		t.Errorf("where %v", where)
	}
	if n := d.Invocations("GetSecretValue"); n != 2 {
		t.Errorf("%d GetSecretValue calls, want 2 (B and C, the names not in the file)", n)
	}
}
