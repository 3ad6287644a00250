package config

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "zero502.yaml")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDefaultsAreTheSourceNumbers(t *testing.T) {
	c := Defaults()
	if c.Balancer.Interval != 5*time.Second || c.Balancer.UnhealthyThreshold != 2 ||
		c.Drain.Window != 15*time.Second || c.Watchdog.HealAfter != 4 {
		t.Fatalf("defaults drifted from the source: interval %s threshold %d drain %s heal_after %d",
			c.Balancer.Interval, c.Balancer.UnhealthyThreshold, c.Drain.Window, c.Watchdog.HealAfter)
	}
}

func TestShippedExamplesLoad(t *testing.T) {
	for _, name := range []string{"production.yaml", "local.yaml"} {
		c, err := Load(filepath.Join("..", "..", "examples", name))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if err := c.RequireFleet(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

func TestFileOverridesOnlyWhatItSets(t *testing.T) {
	c, err := Load(writeConfig(t, "drain:\n  window: 20s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Drain.Window != 20*time.Second || c.Drain.Shutdown != 10*time.Second {
		t.Fatalf("window %s shutdown %s, want 20s and the default 10s", c.Drain.Window, c.Drain.Shutdown)
	}
}

func TestEnvironmentOverridesFile(t *testing.T) {
	t.Setenv("ZERO502_DRAIN_WINDOW", "42s")
	t.Setenv("ZERO502_WATCHDOG_HEAL_AFTER", "6")
	c, err := Load(writeConfig(t, "drain:\n  window: 20s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Drain.Window != 42*time.Second || c.Watchdog.HealAfter != 6 {
		t.Fatalf("window %s heal_after %d, want the environment's 42s and 6", c.Drain.Window, c.Watchdog.HealAfter)
	}
}

func TestBadInputIsRefusedNamingKeyValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		name, body string
		want       []string
	}{
		{"misspelt top-level key", "drian:\n  window: 15s\n", []string{`"drian"`, `did you mean "drain"`}},
		{"misspelt nested key", "balancer:\n  intervall: 5s\n", []string{`"balancer.intervall"`, `"balancer.interval"`}},
		{"misspelt key in a list item", "services:\n  - name: web\n    prot: 80\n    image: x\n", []string{`services[0].prot`}},
		{"negative duration", "drain:\n  window: -3s\n", []string{"drain.window", "-3s", "positive"}},
		{"bare number for a duration", "balancer:\n  interval: 5\n", []string{"interval", "unit"}},
		{"wrong type", "balancer:\n  unhealthy_threshold: two\n", []string{"unhealthy_threshold"}},
		{"unknown balancer kind", "balancer:\n  kind: nginx\n", []string{"balancer.kind", `"nginx"`, "inhouse, alb, edges, dns or none"}},
		{"alb without target group", "balancer:\n  kind: alb\n", []string{"balancer.target_group_arn", "required"}},
		{"service without a name", "services:\n  - image: x\n", []string{"services[0].name", "required"}},
		{"secret not a variable name", "services:\n  - {name: web, image: x, secrets: [DB-PASSWORD]}\n", []string{"services[0].secrets[0]", `"DB-PASSWORD"`, "environment variable's name"}},
		{"secret listed twice", "services:\n  - {name: web, image: x, secrets: [A, A]}\n", []string{"services[0].secrets[1]", `"A"`, "twice"}},
		{"secret given in env", "services:\n  - {name: web, image: x, secrets: [A], env: {A: clear}}\n", []string{"services[0].secrets[0]", `"A"`, "services[0].env", "never in the config"}},
		{"secrets command without a timeout", "secrets:\n  command_timeout: 0s\n", []string{"secrets.command_timeout", "positive"}},
		{"duplicate host", "hosts:\n  - name: a\n  - name: a\n", []string{"hosts[1].name", "unique"}},
		{"balanced service missing", "balancer:\n  service: api\n", []string{"balancer.service", `"api"`}},
		{"negative expected rate", "rollout:\n  analysis:\n    expected_rate: -1\n", []string{"rollout.analysis.expected_rate", "-1", "requests per second"}},
		{"unknown analysis key", "rollout:\n  analysis:\n    max_error: 0.1\n", []string{`"rollout.analysis.max_error"`, "every key must be one zero502 knows"}},
		{"negative p99 floor", "rollout:\n  analysis:\n    min_p99_increase: -1ms\n", []string{"rollout.analysis.min_p99_increase", "-1ms", "positive duration"}},
		{"negative error rate", "rollout:\n  analysis:\n    max_error_rate: -0.1\n", []string{"rollout.analysis.max_error_rate", "-0.1"}},
		{"infinite p99 increase", "rollout:\n  analysis:\n    max_p99_increase: .inf\n", []string{"rollout.analysis.max_p99_increase", "+Inf", "positive share"}},
		{"canary weight 0", "rollout:\n  canary:\n    weight: 0\n", []string{"rollout.canary.weight", ": 0:", "from 1 to 100"}},
		{"canary weight over 100", "rollout:\n  canary:\n    weight: 101\n", []string{"rollout.canary.weight", "101", "from 1 to 100"}},
		{"smoke request without a path", "services:\n  - name: web\n    image: x\n    smoke:\n      - method: GET\n",
			[]string{"services[0].smoke[0].path", `""`, "is required"}},
		{"hook without a program", "hooks:\n  pre_traffic:\n    command: ['', x]\n", []string{"hooks.pre_traffic.command[0]", `""`, "must name the program"}},
		{"service user that is no user name", "services:\n  - name: web\n    image: x\n    user: 'app user'\n",
			[]string{"services[0].user", `"app user"`, "must be a user name"}},
		{"service user with an empty group", "services:\n  - name: web\n    image: x\n    user: 'app:'\n",
			[]string{"services[0].user", `"app:"`, "optionally :group or :gid"}},
		{"service user with a group on the process runtime", "rollout:\n  runtime: process\nservices:\n  - name: web\n    command: [x]\n    user: 'app:app'\n",
			[]string{"services[0].user", `"app:app"`, "a group (user:group) is for the docker runtime"}},
		{"maintenance retry-after in milliseconds", "balancer:\n  maintenance_retry_after: 1500ms\n",
			[]string{"balancer.maintenance_retry_after", "1.5s", "whole seconds"}},
		{"maintenance retry-after of two days", "balancer:\n  maintenance_retry_after: 48h\n",
			[]string{"balancer.maintenance_retry_after", "48h0m0s", "from 1s to 24h0m0s"}},
		{"TLS certificate without its key", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    certificates: [{cert: /etc/ssl/shop.crt}]\n",
			[]string{"balancer.tls.certificates[0].key", `""`, "private key", "/etc/ssl/shop.crt"}},
		{"TLS key without its certificate", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    certificates: [{key: /etc/ssl/shop.key}]\n",
			[]string{"balancer.tls.certificates[0].cert", "/etc/ssl/shop.key"}},
		{"TLS certificates without a listener", "balancer:\n  tls:\n    certificates: [{cert: a.crt, key: a.key}]\n",
			[]string{"balancer.tls.listen", "is required", "0.0.0.0:443"}},
		{"TLS listener without a certificate", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n",
			[]string{"balancer.tls.certificates", "certificate files or tls.acme.domains"}},
		{"ACME without an email", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [shop.example.com], cache_dir: /var/lib/zero502/acme}\n",
			[]string{"balancer.tls.acme.email", "is required"}},
		{"ACME for a wildcard", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: ['*.example.com'], email: a@b.c, cache_dir: /x}\n",
			[]string{"balancer.tls.acme.domains[0]", "*.example.com", "no wildcard"}},
		// names the ACME client would drop without a word (its IDNA lookup refuses them)
		{"ACME for a name with an underscore", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [shop.example.com, a_b.example.com], email: a@b.c, cache_dir: /x}\n",
			[]string{"balancer.tls.acme.domains[1]", "a_b.example.com", "letters, digits and hyphens"}},
		{"ACME for an empty label", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [shop..example.com], email: a@b.c, cache_dir: /x}\n",
			[]string{"balancer.tls.acme.domains[0]", "shop..example.com"}},
		{"ACME for a label starting with a hyphen", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [-shop.example.com], email: a@b.c, cache_dir: /x}\n",
			[]string{"balancer.tls.acme.domains[0]", "-shop.example.com"}},
		{"ACME for an IP address", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [203.0.113.7], email: a@b.c, cache_dir: /x}\n",
			[]string{"balancer.tls.acme.domains[0]", "203.0.113.7", "not an IP address"}},
		{"ACME for a name not in its xn-- form", "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [bücher.example], email: a@b.c, cache_dir: /x}\n",
			[]string{"balancer.tls.acme.domains[0]", "bücher.example", "xn-- form"}},
		{"TLS at an ALB", "balancer:\n  kind: alb\n  target_group_arn: arn:x\n  tls:\n    listen: 0.0.0.0:443\n    certificates: [{cert: a.crt, key: a.key}]\n",
			[]string{"balancer.tls.listen", "balancer.kind must be inhouse"}},
		{"hook with a negative timeout", "hooks:\n  on_failure:\n    timeout: -1s\n", []string{"hooks.on_failure.timeout", "-1s", "positive"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, tc.body))
			if err == nil {
				t.Fatalf("accepted:\n%s", tc.body)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}

// The docker runtime takes services[].user as docker run --user does: a name or uid, and
// optionally its group or gid.
func TestDockerServiceUserTakesAGroup(t *testing.T) {
	for _, user := range []string{"1000:1000", "app:staff", "app", "1000"} {
		c, err := Load(writeConfig(t, "rollout:\n  runtime: docker\nservices:\n  - name: web\n    image: x\n    user: '"+user+"'\n"))
		if err != nil || c.Services[0].User != user {
			t.Errorf("user %q on docker: %v", user, err)
		}
	}
}

func TestMissingExplicitFileIsAnError(t *testing.T) {
	if _, err := Load(filepath.Join(t.TempDir(), "nope.yaml")); err == nil {
		t.Fatal("a missing --config file was accepted")
	}
}

func TestTargetsAreTheBalancedServiceOnEveryHost(t *testing.T) {
	c, err := Load(filepath.Join("..", "..", "examples", "local.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(c.Targets(), ",")
	if got != "127.0.0.1:19001,127.0.0.1:19101,127.0.0.1:19201" {
		t.Fatalf("targets %s", got)
	}
	if want := fmt.Sprintf("/tmp/zero502-%d/host-b/deploy.lock", os.Getuid()); c.HostLockPath(c.Hosts[1]) != want {
		t.Fatalf("lock path %s", c.HostLockPath(c.Hosts[1]))
	}
}

func TestServiceEnvNamesKeepTheirCase(t *testing.T) {
	c, err := Load(writeConfig(t, "rollout:\n  runtime: process\nservices:\n  - name: web\n    command: [x]\n    env:\n      PATH_PREFIX: /api\n      Mixed_Case: \"8080\"\n"))
	if err != nil {
		t.Fatal(err)
	}
	env := c.Services[0].Env
	if env["PATH_PREFIX"] != "/api" || env["Mixed_Case"] != "8080" || len(env) != 2 {
		t.Fatalf("env %v, want PATH_PREFIX=/api Mixed_Case=8080 as written", env)
	}
}

func TestRolloutBatchAsAShareOfTheFleet(t *testing.T) {
	hosts := "hosts:\n"
	for i := range 10 {
		hosts += fmt.Sprintf("  - {name: h%d, port_offset: %d}\n", i, i)
	}
	svc := "services: [{name: web, port: 8000, command: [app]}]\nrollout: {runtime: process, batch: %s}\nbalancer: {kind: none}\n"
	for _, tc := range []struct {
		batch string
		want  int
	}{{"20%", 2}, {"25%", 2}, {"1%", 1}, {"100%", 10}, {"3", 3}, {`"50%"`, 5}} {
		cfg, err := LoadBytes([]byte(fmt.Sprintf(svc, tc.batch)+hosts), "batch")
		if err != nil {
			t.Errorf("rollout.batch %s: %v", tc.batch, err)
			continue
		}
		if cfg.Rollout.Batch != tc.want {
			t.Errorf("rollout.batch %s of 10 hosts = %d, want %d", tc.batch, cfg.Rollout.Batch, tc.want)
		}
	}
	for _, bad := range []string{"0%", "150%", "x%", "-5%"} {
		_, err := LoadBytes([]byte(fmt.Sprintf(svc, bad)+hosts), "batch")
		if err == nil || !strings.Contains(err.Error(), "rollout.batch") || !strings.Contains(err.Error(), "share of the fleet from 1% to 100%") {
			t.Errorf("rollout.batch %s: %v; want refused naming the key and the rule", bad, err)
		}
	}
}

// A top-level key starting x- is an extension, ignored (as Kamal's and Compose's): its anchors
// serve the sections that alias or merge them. Inside a section an x- key is still unknown.
func TestTopLevelExtensionsHoldAnchorsAndAreIgnored(t *testing.T) {
	const withAnchors = `x-host: &host {port_offset: 3, state_dir: /srv/zero502}
x-grace: &grace 25s
services: [{name: web, port: 8000, command: [app]}]
rollout: {runtime: process}
balancer: {kind: none}
drain: {stop_grace: *grace}
hosts:
  - {<<: *host, name: a}
  - {<<: *host, name: b, port_offset: 4}
`
	cfg, err := LoadBytes([]byte(withAnchors), "anchors")
	if err != nil {
		t.Fatalf("a config with x- extensions: %v", err)
	}
	if len(cfg.Hosts) != 2 || cfg.Hosts[0].PortOffset != 3 || cfg.Hosts[0].StateDir != "/srv/zero502" ||
		cfg.Hosts[1].PortOffset != 4 || cfg.Hosts[1].StateDir != "/srv/zero502" {
		t.Errorf("hosts merged from the x-host anchor: %+v, want a (offset 3) and b (offset 4, its own), both in /srv/zero502", cfg.Hosts)
	}
	if cfg.Drain.StopGrace != 25*time.Second {
		t.Errorf("drain.stop_grace from the x-grace alias = %v, want 25s", cfg.Drain.StopGrace)
	}
	inSection := strings.Replace(withAnchors, "balancer: {kind: none}", "balancer: {kind: none, x-note: hi}", 1)
	if _, err := LoadBytes([]byte(inSection), "anchors"); err == nil || !strings.Contains(err.Error(), `unknown key "balancer.x-note"`) {
		t.Errorf("an x- key inside a section: %v, want it refused as an unknown key", err)
	}
	typo := strings.Replace(withAnchors, "x-grace:", "xgrace:", 1)
	if _, err := LoadBytes([]byte(typo), "anchors"); err == nil || !strings.Contains(err.Error(), `unknown key "xgrace"`) {
		t.Errorf("a top-level key that only looks like an extension: %v, want it refused", err)
	}
}

// rollout.max_unavailable takes a count or a share of the fleet, rounded down to what may be 0
// hosts (as Kubernetes' maxUnavailable); it is start-first's, and stop-first refuses it.
func TestRolloutMaxUnavailable(t *testing.T) {
	hosts := "hosts:\n"
	for i := range 10 {
		hosts += fmt.Sprintf("  - {name: h%d, port_offset: %d}\n", i, i)
	}
	svc := "services: [{name: web, ports: [8000, 9000], command: [app]}]\n" +
		"rollout: {runtime: process, batch: 4, strategy: %s, max_unavailable: %s}\nbalancer: {kind: none}\n"
	for _, tc := range []struct {
		value       string
		want, share int
	}{{"20%", 2, 20}, {"25%", 2, 25}, {"5%", 0, 5}, {"3", 3, 0}, {"0", 0, 0}} {
		cfg, err := LoadBytes([]byte(fmt.Sprintf(svc, StartFirst, tc.value)+hosts), "unavailable")
		if err != nil {
			t.Errorf("rollout.max_unavailable %s: %v", tc.value, err)
			continue
		}
		if cfg.Rollout.MaxUnavailable != tc.want || cfg.Rollout.MaxUnavailableShare != tc.share {
			t.Errorf("rollout.max_unavailable %s of 10 hosts = %d (share %d%%), want %d (%d%%)", tc.value,
				cfg.Rollout.MaxUnavailable, cfg.Rollout.MaxUnavailableShare, tc.want, tc.share)
		}
		out, err := Encode(cfg)
		if err != nil {
			t.Fatal(err)
		}
		again, err := LoadBytes(out, "encoded")
		if err != nil || again.Rollout.MaxUnavailable != tc.want || again.Rollout.MaxUnavailableShare != tc.share {
			t.Errorf("rollout.max_unavailable %s through Encode: %d (share %d%%), %v", tc.value,
				again.Rollout.MaxUnavailable, again.Rollout.MaxUnavailableShare, err)
		}
	}
	for _, tc := range []struct{ strategy, value, want string }{
		{StartFirst, "-1", "rollout.max_unavailable: -1: must be at least 0"},
		{StartFirst, "0%", "share of the fleet from 1% to 100%"},
		{StartFirst, "120%", "share of the fleet from 1% to 100%"},
		{StopFirst, "1", "rollout.max_unavailable: 1: applies to rollout.strategy start-first only"},
		// a share is refused as a count is, even where it comes to 0 hosts: one more host must
		// not turn a config that loads into one that does not
		{StopFirst, "5%", "rollout.max_unavailable: 5%: applies to rollout.strategy start-first only"},
	} {
		_, err := LoadBytes([]byte(fmt.Sprintf(svc, tc.strategy, tc.value)+hosts), "unavailable")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s, rollout.max_unavailable %s: %v; want refused with %q", tc.strategy, tc.value, err, tc.want)
		}
	}
}

// services[].env and services[].command are held to what a process can be given: an env name is
// what comes before the '=' (no '=' in it: "PATH=/opt/evil/bin" would set PATH; a dotted name is
// fine, as Docker takes it), no value or command word holds a NUL byte, and a process-runtime
// command[0] is a name or an absolute path (the service runs in /, so ./server would not be the
// file meant). Each refusal names the key, the value and the rule when the config loads, before
// a deploy changes anything.
func TestServiceEnvAndCommandAProcessCannotBeGivenAreRefused(t *testing.T) {
	const base = "rollout: {runtime: process}\nhosts: [{name: h1, address: 127.0.0.1, state_dir: /tmp/x}]\n"
	for _, tc := range []struct{ svc, key, value, rule string }{
		{`{name: web, command: [/bin/true], env: {A: "x\0y"}}`, "services[0].env.A", `"x\x00y"`, "NUL"},
		{`{name: web, command: [/bin/true], env: {"PATH=/opt/evil/bin": d}}`, "services[0].env", `"PATH=/opt/evil/bin"`, "'='"},
		{`{name: web, command: [/bin/true, "a\0b"]}`, "services[0].command[1]", `"a\x00b"`, "NUL"},
		{`{name: web, command: [./server]}`, "services[0].command[0]", `"./server"`, "absolute path"},
		{`{name: web, command: [bin/server]}`, "services[0].command[0]", `"bin/server"`, "absolute path"},
	} {
		_, err := Load(writeConfig(t, base+"services: ["+tc.svc+"]\n"))
		if err == nil || !strings.Contains(err.Error(), tc.key+": "+tc.value+": ") || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("services: [%s]: Load = %v; want %s: %s: ...%s...", tc.svc, err, tc.key, tc.value, tc.rule)
		}
	}
	if _, err := Load(writeConfig(t, base+"services: [{name: web, command: [server, ./conf], env: {_A1: \"x y\", PATH: /opt/app/bin, spring.datasource.url: x}}]\n")); err != nil {
		t.Fatalf("a bare command name and plain env: %v", err)
	}
}

// The ACME names a client's SNI carries are taken: any case, a trailing dot, an internationalised
// name in its xn-- form, a single label.
func TestACMEDomainsThatAreHostNamesAreAccepted(t *testing.T) {
	body := "balancer:\n  tls:\n    listen: 0.0.0.0:443\n    acme: {domains: [Shop.Example.COM., xn--bcher-kva.example, intranet, a-b.c0.example], email: a@b.c, cache_dir: /x}\n"
	if _, err := Load(writeConfig(t, body)); err != nil {
		t.Fatalf("refused:\n%s\n%v", body, err)
	}
}

// A count (an int key) is a whole number: a fraction is refused naming the key and the value,
// never cut to the number below (heal_after: 4.9 healing after 4 failures), and a number too
// large for it is refused as written, never wrapped to a negative one.
func TestACountThatIsNotAWholeNumberIsRefused(t *testing.T) {
	for _, tc := range []struct{ body, key, value string }{
		{"watchdog:\n  heal_after: 4.9\n", "watchdog.heal_after", "4.9"},
		{"rollout:\n  canary:\n    weight: 5.5\n", "rollout.canary.weight", "5.5"},
		{"rollout:\n  batch: 1.5\n", "rollout.batch", "1.5"},
		{"balancer:\n  max_header_bytes: 1e20\n", "balancer.max_header_bytes", "1e+20"},
		{"balancer:\n  max_header_bytes: 18446744073709551615\n", "balancer.max_header_bytes", "18446744073709551615"},
		{"services:\n  - {name: web, image: x, port: 8080.5}\n", "services[0].port", "8080.5"},
	} {
		c, err := Load(writeConfig(t, tc.body))
		if err == nil {
			t.Errorf("%q loaded (watchdog.heal_after %d, canary weight %d, batch %d, max_header_bytes %d); want it refused",
				tc.body, c.Watchdog.HealAfter, c.Rollout.Canary.Weight, c.Rollout.Batch, c.Balancer.MaxHeaderBytes)
			continue
		}
		for _, want := range []string{tc.key, tc.value, "whole number"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q: refusal %q does not say %q", tc.body, err, want)
			}
		}
	}
	// A whole number written with a fraction's form is still that number.
	c, err := Load(writeConfig(t, "watchdog:\n  heal_after: 5.0\n"))
	if err != nil || c.Watchdog.HealAfter != 5 {
		t.Errorf("heal_after: 5.0: %v, %v; want 5", c, err)
	}
}

// An unknown key is offered the closest key there is, never a field that is no key at all
// (SecretValues, rollout's BatchShare: mapstructure:"-").
func TestAnUnknownKeyIsNeverOfferedAFieldThatIsNoKey(t *testing.T) {
	for _, body := range []string{"x: 1\n", "rollout:\n  b: 1\n"} {
		_, err := Load(writeConfig(t, body))
		if err == nil {
			t.Fatalf("%q loaded; want it refused as an unknown key", body)
		}
		if strings.Contains(err.Error(), `-"?`) {
			t.Errorf("%q: refusal %q offers a field that is no key", body, err)
		}
	}
}

// Every scalar key takes its ZERO502_* override, true/false and fractions too: an environment
// value is always text, and rollout.analysis.enabled or max_error_rate must not be the keys
// whose override is refused as "false is text; it must be true or false".
func TestBooleanAndFractionalKeysTakeEnvironmentOverrides(t *testing.T) {
	t.Setenv("ZERO502_ROLLOUT_ANALYSIS_ENABLED", "false")
	t.Setenv("ZERO502_ROLLOUT_ANALYSIS_MAX_ERROR_RATE", "0.1")
	t.Setenv("ZERO502_ROLLOUT_ANALYSIS_EXPECTED_RATE", "12.5")
	c, err := Load(writeConfig(t, "drain:\n  window: 20s\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Rollout.Analysis.Enabled || c.Rollout.Analysis.MaxErrorRate != 0.1 || c.Rollout.Analysis.ExpectedRate != 12.5 {
		t.Fatalf("analysis enabled %t, max_error_rate %v, expected_rate %v; want the environment's false, 0.1 and 12.5",
			c.Rollout.Analysis.Enabled, c.Rollout.Analysis.MaxErrorRate, c.Rollout.Analysis.ExpectedRate)
	}
	for name, value := range map[string]string{"ZERO502_ROLLOUT_ANALYSIS_ENABLED": "yes", "ZERO502_ROLLOUT_ANALYSIS_MAX_ERROR_RATE": "0.1x"} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(name, value)
			_, err := Load(writeConfig(t, ""))
			if err == nil {
				t.Fatalf("%s=%s loaded; want it refused", name, value)
			}
			if !strings.Contains(err.Error(), name+"="+value) {
				t.Errorf("refusal %q does not name %s=%s", err, name, value)
			}
		})
	}
}

// A hook's command and secrets.command are run as services[].command is, so what no program can
// be given (a NUL byte) or no program at all is refused at load, naming the word, and never
// found by the exec in the middle of a deploy (pre_traffic runs once a host's new instance
// started).
func TestHookAndSecretsCommandsAProgramCannotBeGivenAreRefused(t *testing.T) {
	for _, tc := range []struct{ body, key, value, rule string }{
		{`hooks: {pre_traffic: {command: [/bin/true, "a\0b"]}}`, "hooks.pre_traffic.command[1]", `"a\x00b"`, "NUL"},
		{`hooks: {post_deploy: {command: ["/bin/tr\0ue"]}}`, "hooks.post_deploy.command[0]", `"/bin/tr\x00ue"`, "NUL"},
		{`secrets: {command: [/bin/pass, "a\0b"]}`, "secrets.command[1]", `"a\x00b"`, "NUL"},
		{`secrets: {command: [" "]}`, "secrets.command[0]", `" "`, "must name the program"},
	} {
		_, err := Load(writeConfig(t, tc.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.key+": "+tc.value+": ") || !strings.Contains(err.Error(), tc.rule) {
			t.Errorf("%s: Load = %v; want %s: %s: ...%s...", tc.body, err, tc.key, tc.value, tc.rule)
		}
	}
}

// A path zero502 sends in a request line (a health check, a smoke request, the version check,
// the edge's upstream check) is refused at load when no request can carry it as written: a
// space (the in-house LB refuses it, naming a flag the user never gave), a control character
// (no request is sent at all: every health check of a new instance fails, mid-deploy).
func TestARequestPathWithSpacesOrControlCharactersIsRefused(t *testing.T) {
	for _, tc := range []struct{ body, key, value string }{
		{"balancer: {health_path: '/he alth'}", "balancer.health_path", `"/he alth"`},
		{"services: [{name: web, image: x, health_path: \"/health\\n\"}]", "services[0].health_path", `"/health\n"`},
		{"services: [{name: web, image: x, health: {path: \"/a\\tb\"}}]", "services[0].health.path", `"/a\tb"`},
		{"services: [{name: web, image: x, smoke: [{path: \"/orders\\r\\nX: y\"}]}]", "services[0].smoke[0].path", `"/orders\r\nX: y"`},
		{"services: [{name: web, image: x, verify: {version_path: '/v ersion'}}]", "services[0].verify.version_path", `"/v ersion"`},
		{"edge: {upstream_check: {path: \"/_lb/health\\u007f\"}}", "edge.upstream_check.path", `"/_lb/health\x7f"`},
	} {
		_, err := Load(writeConfig(t, tc.body+"\n"))
		if err == nil || !strings.Contains(err.Error(), tc.key+": "+tc.value+": ") || !strings.Contains(err.Error(), "without spaces or control characters") {
			t.Errorf("%s: Load = %v; want %s: %s: ...without spaces or control characters...", tc.body, err, tc.key, tc.value)
		}
	}
	if _, err := Load(writeConfig(t, "services: [{name: web, image: x, health_path: /health, smoke: [{path: '/orders?dry-run=1&a=%20'}]}]\n")); err != nil {
		t.Fatalf("plain paths: %v", err)
	}
}

// verify.version_header is a response header's name: one no response can carry (a space, a
// colon) would fail the verification of every new instance, mid-deploy, so it is refused at load.
func TestAVersionHeaderThatIsNoHeaderNameIsRefused(t *testing.T) {
	for _, name := range []string{"X Version", "X-Version:", "X-Versión"} {
		_, err := Load(writeConfig(t, fmt.Sprintf("services: [{name: web, image: x, verify: {version_header: %q}}]\n", name)))
		if want := fmt.Sprintf("services[0].verify.version_header: %q: must be an HTTP header name", name); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("version_header %q: Load = %v; want ...%s...", name, err, want)
		}
	}
	if _, err := Load(writeConfig(t, "services: [{name: web, image: x, verify: {version_header: X-App_Version.1}}]\n")); err != nil {
		t.Fatalf("a header name: %v", err)
	}
}

// A duration too long for zero502 to hold is refused as out of range, not as a value without a unit:
// "3000000h is not a duration; write it with a unit" would send its author looking for the
// wrong mistake.
func TestADurationTooLongIsRefusedAsTooLong(t *testing.T) {
	_, err := Load(writeConfig(t, "drain:\n  window: 3000000h\n"))
	if err == nil || !strings.Contains(err.Error(), `drain.window: "3000000h" is out of range: a duration is at most 2562047h47m16.854775807s`) ||
		strings.Contains(err.Error(), "write it with a unit") {
		t.Fatalf("window 3000000h: %v; want it refused as too long", err)
	}
}

// The file's keys are read in any case and a dotted key is its sections (viper's reading), so a
// key written twice in two such forms is one key set twice: refused naming both, as YAML refuses
// a key written twice alike, never one of them silently winning.
func TestAKeySetTwiceInTwoFormsIsRefused(t *testing.T) {
	for _, tc := range []struct{ body, first, second string }{
		{"drain:\n  window: 20s\n  Window: 31s\n", `"drain.Window"`, `"drain.window"`},
		{"Drain:\n  window: 30s\ndrain:\n  window: 20s\n", `"Drain"`, `"drain"`},
		{"drain:\n  window: 20s\ndrain.window: 40s\n", `"drain.window"`, `the dotted key "drain.window"`},
		{"services:\n  - {name: web, Name: api, image: x}\n", `"services[0].Name"`, `"services[0].name"`},
	} {
		_, err := Load(writeConfig(t, tc.body))
		if err == nil || !strings.Contains(err.Error(), "set twice") || !strings.Contains(err.Error(), tc.first) || !strings.Contains(err.Error(), tc.second) {
			t.Errorf("%q: Load = %v; want it refused as set twice, naming %s and %s", tc.body, err, tc.first, tc.second)
		}
	}
	// services[].env names are the service's own, in their case: PATH and Path are two.
	c, err := Load(writeConfig(t, "services:\n  - {name: web, image: x, env: {PATH: /bin, Path: x}}\n"))
	if err != nil || c.Services[0].Env["PATH"] != "/bin" || c.Services[0].Env["Path"] != "x" {
		t.Fatalf("env PATH and Path: %v, %v", c, err)
	}
}
