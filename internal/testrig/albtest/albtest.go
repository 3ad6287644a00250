// Package albtest is the tests' one ELBv2 rig: the ELBv2 API double (infra/alb/elbv2double) on
// loopback holding one target group, and the real aws-sdk-go-v2 client pointed at it with static
// credentials, the machine's AWS configuration shut out. No AWS is reachable here; the double
// speaks the real wire protocol to the real SDK.
package albtest

import (
	"context"
	"net"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/alb"
	"github.com/zero502/zero502/infra/alb/elbv2double"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
)

// Region is the region of the double and of its target group's ARN.
const Region = "eu-west-1"

// AccessKeyID and SecretAccessKey are the static test credentials the rig's client signs with
// (and Start's environment carries, for code that uses the SDK's default chain).
const (
	AccessKeyID     = "AKIDZERO502TEST"
	SecretAccessKey = "not-a-secret"
)

// Double is a running ELBv2 double with one target group and the SDK client for it.
type Double struct {
	Server *elbv2double.Server
	URL    string // the double's endpoint (http://127.0.0.1:port)
	ARN    string // the target group's ARN
	API    *elbv2.Client
	// Balancer is the source's balancer numbers, kind alb, pointing at ARN in Region.
	Balancer config.Balancer
}

// Start starts the double on clk (nil: real time) with target group tg, until the test ends.
// The SDK's default chain sees only the static credentials in the environment: no profile,
// config file or instance metadata of the machine. Start sets that environment for the test
// (t.Setenv, so the test cannot be parallel) unless the test binary's TestMain set it for the
// whole process with SetProcessEnv.
func Start(t testing.TB, clk clock.Clock, tg elbv2double.TargetGroup) *Double {
	t.Helper()
	if os.Getenv(processEnvMarker) == "" {
		for k, v := range sdkEnv(t.TempDir()) {
			t.Setenv(k, v)
		}
	}
	s := elbv2double.New(elbv2double.Options{Clock: clk, Region: Region})
	t.Cleanup(s.Close)
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	d := &Double{Server: s, URL: srv.URL, ARN: s.AddTargetGroup(tg)}
	d.Balancer = config.Defaults().Balancer
	d.Balancer.Kind = config.BalancerALB
	d.Balancer.TargetGroupARN = d.ARN
	d.Balancer.Region = Region
	api, err := alb.NewClient(context.Background(), d.Balancer, alb.ClientOptions{
		Endpoint: srv.URL, Credentials: credentials.NewStaticCredentialsProvider(AccessKeyID, SecretAccessKey, ""),
	})
	if err != nil {
		t.Fatalf("albtest: SDK client for the ELBv2 double at %s: %v", srv.URL, err)
	}
	d.API = api
	return d
}

// processEnvMarker is set by SetProcessEnv.
const processEnvMarker = "ALBTEST_PROCESS_ENV" // not ZERO502_*: the config refuses unknown ones

// sdkEnv is the environment the SDK's default chain reads, pointing at nothing of the machine's
// but files in dir (which need not exist).
func sdkEnv(dir string) map[string]string {
	return map[string]string{
		"AWS_ACCESS_KEY_ID": AccessKeyID, "AWS_SECRET_ACCESS_KEY": SecretAccessKey,
		"AWS_EC2_METADATA_DISABLED": "true", "AWS_CONFIG_FILE": filepath.Join(dir, "config"),
		"AWS_SHARED_CREDENTIALS_FILE": filepath.Join(dir, "credentials"), "AWS_PROFILE": "", "AWS_REGION": "",
	}
}

// SetProcessEnv sets Start's environment for the whole test binary, from its TestMain, so tests
// that start doubles can run in parallel. Every test of that binary then sees it.
func SetProcessEnv() error {
	dir, err := os.MkdirTemp("", "albtest-")
	if err != nil {
		return err
	}
	for k, v := range sdkEnv(dir) {
		if err := os.Setenv(k, v); err != nil {
			return err
		}
	}
	return os.Setenv(processEnvMarker, dir)
}

// Target is the SDK's description of target ip:port.
func Target(t testing.TB, addr string) types.TargetDescription {
	t.Helper()
	host, port, err := net.SplitHostPort(addr)
	p, perr := strconv.Atoi(port)
	if err != nil || perr != nil {
		t.Fatalf("albtest: target %q: want ip:port", addr)
	}
	return types.TargetDescription{Id: aws.String(host), Port: aws.Int32(int32(p))}
}

// Register puts targets (ip:port) into the target group through the SDK.
func (d *Double) Register(t testing.TB, addrs ...string) {
	t.Helper()
	var ts []types.TargetDescription
	for _, a := range addrs {
		ts = append(ts, Target(t, a))
	}
	if _, err := d.API.RegisterTargets(context.Background(), &elbv2.RegisterTargetsInput{TargetGroupArn: aws.String(d.ARN), Targets: ts}); err != nil {
		t.Fatalf("RegisterTargets %v: %v", addrs, err)
	}
}

// Deregister takes target ip:port out of the target group through the SDK.
func (d *Double) Deregister(t testing.TB, addr string) {
	t.Helper()
	if _, err := d.API.DeregisterTargets(context.Background(), &elbv2.DeregisterTargetsInput{
		TargetGroupArn: aws.String(d.ARN), Targets: []types.TargetDescription{Target(t, addr)},
	}); err != nil {
		t.Fatalf("DeregisterTargets %s: %v", addr, err)
	}
}
