package deployer

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/zero502/zero502/infra/runtime"
)

// A deploy starts a service with the runtime's fixed base environment (plus the service's
// configured env, none here): nothing of the deployer's own environment reaches it.
func TestADeployedServiceGetsNothingOfTheDeployersEnvironment(t *testing.T) {
	t.Setenv("AWS_SECRET_ACCESS_KEY", "deployer-secret")
	t.Setenv("ZERO502_SSH_OPTS", "-i /root/.ssh/deploy_key")
	f := newFleet(t, 2) // I8 wants a host left healthy while one is drained
	v := defaultValues()
	v.Kind = "none"
	cfg := f.load(f.config("env.yaml", v))
	var ev eventLog
	if _, err := f.deployer(cfg, &ev, Options{}).Deploy(context.Background(), "v1"); err != nil {
		t.Fatalf("deploy: %v\nevents:\n%s", err, &ev)
	}
	insts, err := f.runtimes[hostName(0)].List(context.Background(), runtime.Filter{Service: "web"})
	if err != nil || len(insts) != 1 || !insts[0].Running() {
		t.Fatalf("web instances %+v %v, want one running", insts, err)
	}
	var pid int
	if _, err := fmt.Sscanf(insts[0].ID, "pid:%d", &pid); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", pid))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimRight(string(data), "\x00"), "\x00")
	want := runtime.EnvList(runtime.BaseEnv())
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("deployed service environment\n%s\nwant exactly the base\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
