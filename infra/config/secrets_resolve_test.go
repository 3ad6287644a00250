package config

import (
	"context"
	"errors"
	"testing"
)

// A program without the Secrets Manager reader refuses secrets.aws, naming the key, rather than
// deploy without what it asks for; a config whose services name no secret runs no source at all.
func TestSecretsAWSNeedsItsReaderAndNoSecretsNeedNothing(t *testing.T) {
	cfg := Defaults()
	cfg.Secrets.AWS.Enabled = true
	cfg.Secrets.Command = []string{"/nonexistent/must-not-run"}
	if where, err := cfg.ResolveSecrets(context.Background()); err != nil || where != nil || cfg.SecretValues != nil {
		t.Fatalf("no secret named: %v, %v; want nothing resolved and nothing run", where, err)
	}
	cfg.Services = []Service{{Name: "web", Secrets: []string{"A"}}}
	cfg.Secrets.Command = nil
	_, err := cfg.ResolveSecrets(context.Background())
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Key != "secrets.aws.enabled" {
		t.Fatalf("secrets.aws without its reader: %v, want a FieldError on secrets.aws.enabled", err)
	}
}
