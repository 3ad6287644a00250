// Package secretsmanager reads secret values from AWS Secrets Manager for services[].secrets:
// the secret named prefix+NAME gives NAME's value, through the real aws-sdk-go-v2 client. It owns
// only the reading: which names a deploy looks for, and in what order of sources, is package
// infra/secrets' (Resolve). A value comes back only as a secrets.Value, which never prints, and
// no error this package returns carries one.
package secretsmanager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	sm "github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/secrets"
)

// callTimeout bounds each GetSecretValue call, the SDK's retries included: the client has no
// timeout of its own, and the deploy resolves its secrets on its own context, which nothing else
// bounds, so an endpoint that accepts the connection and never answers (a VPC endpoint behind a
// broken route, a proxy) would hold the deploy forever, where secrets.command is bounded by its
// timeout. Secrets Manager answers within a second; the SDK's standard retryer makes 3 attempts
// with at most 2s and 4s of backoff between them: 20s lets a slow endpoint finish all three and
// still turns a hung one into an error. A variable so the tests can shorten it.
var callTimeout = 20 * time.Second

// secretsAPI is the part of the Secrets Manager client Lookup calls; *secretsmanager.Client has it.
type secretsAPI interface {
	GetSecretValue(ctx context.Context, in *sm.GetSecretValueInput, optFns ...func(*sm.Options)) (*sm.GetSecretValueOutput, error)
}

var _ secretsAPI = (*sm.Client)(nil)

// NewClient builds the Secrets Manager client: credentials from the SDK's default chain
// (environment, shared profile, web identity, IMDS), region from region when set, else from the
// chain (AWS_REGION, profile). The endpoint is the region's, unless the environment or profile
// names another (AWS_ENDPOINT_URL_SECRETS_MANAGER, e.g. a VPC endpoint).
func NewClient(ctx context.Context, region string) (*sm.Client, error) {
	var load []func(*awsconfig.LoadOptions) error
	if region != "" {
		load = append(load, awsconfig.WithRegion(region))
	}
	cfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("secrets manager: loading AWS configuration (credentials and region): %w", err)
	}
	if cfg.Region == "" {
		return nil, errors.New("secrets manager: no AWS region: name the region the secrets are in " +
			"(e.g. eu-west-1), or set AWS_REGION in the deploy job's environment")
	}
	return sm.NewFromConfig(cfg), nil
}

// Lookup reads the secret prefix+name of every name in names, one GetSecretValue each, in order
// (a name given twice is read once). A secret's value is its SecretString, or its SecretBinary's
// bytes when that is what it holds. A secret Secrets Manager does not have
// (ResourceNotFoundException) is not an error: its name is left out of the map, for the caller to
// look it up elsewhere or report it missing. Any other failure stops Lookup with an error that
// names the secret id and what to check (credentials, region, the IAM permission
// secretsmanager:GetSecretValue; the way to Secrets Manager when no answer came, or none within
// callTimeout), wrapping the SDK's error; it never carries a value.
func Lookup(ctx context.Context, api secretsAPI, prefix string, names []string) (map[string]secrets.Value, error) {
	out := make(map[string]secrets.Value, len(names))
	seen := make(map[string]bool, len(names))
	for _, name := range names {
		if seen[name] {
			continue
		}
		seen[name] = true
		id := prefix + name
		call, cancel := context.WithTimeout(ctx, callTimeout)
		res, err := api.GetSecretValue(call, &sm.GetSecretValueInput{SecretId: aws.String(id)})
		hung := call.Err() != nil && ctx.Err() == nil
		cancel()
		var notFound *types.ResourceNotFoundException
		var unsent *smithyhttp.RequestSendError
		switch {
		case errors.As(err, &notFound):
			continue
		case err != nil && !hung && errors.As(err, &unsent): // no answer came: not a matter of credentials
			return nil, fmt.Errorf("secrets manager: reading secret %s%s: %w; check that this machine reaches Secrets Manager there "+
				"(network, proxy, VPC endpoint, AWS_ENDPOINT_URL_SECRETS_MANAGER)", id, where(api), withheld(err))
		case err != nil && hung:
			return nil, fmt.Errorf("secrets manager: reading secret %s%s: it did not answer within %s (%w); check that this machine "+
				"reaches Secrets Manager there (network, proxy, VPC endpoint, AWS_ENDPOINT_URL_SECRETS_MANAGER)", id, where(api), callTimeout, withheld(err))
		case err != nil:
			return nil, fmt.Errorf("secrets manager: reading secret %s%s: %w; check the AWS credentials of the deploy, "+
				"the region, and that they are allowed secretsmanager:GetSecretValue on it", id, where(api), withheld(err))
		case res.SecretString != nil:
			out[name] = secrets.Value(*res.SecretString)
		case res.SecretBinary != nil:
			out[name] = secrets.Value(res.SecretBinary)
		default:
			return nil, fmt.Errorf("secrets manager: secret %s%s has neither SecretString nor SecretBinary in its current "+
				"version (AWSCURRENT); put a value in it", id, where(api))
		}
	}
	return out, nil
}

// where is " in region R" when api is a client that knows its region, else "".
func where(api secretsAPI) string {
	if c, ok := api.(interface{ Options() sm.Options }); ok {
		if r := c.Options().Region; r != "" {
			return " in region " + r
		}
	}
	return ""
}

// withheld is err unless it is an answer the SDK could not read: the text of such an error may
// quote the answer, which may hold the value, so it is replaced (errors.As and errors.Is still
// reach the SDK's error).
func withheld(err error) error {
	var de *smithy.DeserializationError
	if errors.As(err, &de) {
		return &unreadable{err: err}
	}
	return err
}

// unreadable is an answer the SDK could not read, its details withheld.
type unreadable struct{ err error }

func (e *unreadable) Error() string {
	return "the answer could not be read (its details are withheld: they may quote the secret's value)"
}

func (e *unreadable) Unwrap() error { return e.err }

// Store is Secrets Manager as a store of secrets (secrets.Store): the client is made, with the
// deploy job's credentials, the first time a name is asked for.
func Store(region, prefix string) secrets.Store {
	return secrets.Store{Name: "aws secrets manager", Lookup: func(ctx context.Context, names []string) (map[string]secrets.Value, error) {
		c, err := NewClient(ctx, region)
		if err != nil {
			return nil, err
		}
		return Lookup(ctx, c, prefix, names)
	}}
}

func init() {
	config.SecretStoreAWS = func(a config.SecretsAWS) secrets.Store { return Store(a.Region, a.Prefix) }
}
