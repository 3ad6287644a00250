package config

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"go.yaml.in/yaml/v3"

	"github.com/zero502/zero502/examples"
)

// roundTrip encodes cfg, loads it back and requires the same Config, and the same bytes when
// encoded again (the encoding is stable: a config sent twice is sent the same).
func roundTrip(t *testing.T, name string, cfg *Config) {
	t.Helper()
	data, err := Encode(cfg)
	if err != nil {
		t.Fatalf("%s: Encode: %v", name, err)
	}
	back, err := LoadBytes(data, name+" encoded")
	if err != nil {
		t.Fatalf("%s: the encoded config does not load: %v\n%s", name, err, data)
	}
	if !reflect.DeepEqual(cfg, back) {
		t.Fatalf("%s: encoded and loaded back differs:\nwant %+v\ngot  %+v\nencoded:\n%s", name, *cfg, *back, data)
	}
	again, err := Encode(back)
	if err != nil || !bytes.Equal(data, again) {
		t.Fatalf("%s: encoding the loaded-back config differs (%v):\n%s\nthen\n%s", name, err, data, again)
	}
}

func TestEncodeRoundTripsEveryShippedConfigAndTheDefaults(t *testing.T) {
	roundTrip(t, "defaults.yaml", Defaults())
	names, err := fs.Glob(examples.Files, "*.yaml")
	if err != nil || len(names) < 3 {
		t.Fatalf("shipped configs %v, %v; want at least local, production and any-service", names, err)
	}
	for _, n := range names {
		data, _ := examples.Files.ReadFile(n)
		cfg, err := LoadBytes(data, n)
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		roundTrip(t, n, cfg)
		// What the deployer sends a remote host: an ssh host, env names in mixed case.
		cfg.Hosts[0].SSH = "deploy@web-1:2222"
		cfg.Services[0].Env = map[string]string{"PATH_PREFIX": "/x", "mode": "a b"}
		roundTrip(t, n+" over ssh", cfg)
	}
}

func TestEncodeWritesConfigNamesAndGoDurations(t *testing.T) {
	cfg := Defaults()
	cfg.Drain.Window = 1500 * time.Millisecond
	cfg.Services = []Service{{Name: "web", Image: "app:{version}", Port: 8080,
		Env: map[string]string{"PATH_PREFIX": "/x", "EMPTY": ""}}}
	data, err := Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\n  window: 1.5s\n", "\n  keepalive_idle_timeout: 1m15s\n", "\n  unhealthy_threshold: 2\n",
		"PATH_PREFIX: /x", `EMPTY: ""`, "accept_proxy_from: []"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("encoded config lacks %q:\n%s", want, data)
		}
	}
	// A list the config leaves out (nil) stays out: it loads back nil, not as an empty list.
	for _, absent := range []string{"\n    command:", "\n    ports:"} { // the service's (secrets.command is set)
		if strings.Contains(string(data), absent) {
			t.Errorf("encoded config writes the unset %s:\n%s", absent, data)
		}
	}
}

// squashed mirrors a config section whose numbers live in an embedded struct, as mapstructure's
// `,squash` reads them: the embedded struct's keys sit in the parent section itself.
type squashed struct {
	Numbers squashedNumbers `mapstructure:",squash"`
	Name    string          `mapstructure:"name"`
	Extra   []string        `mapstructure:"extra"`
}

type squashedNumbers struct {
	Interval  time.Duration `mapstructure:"interval"`
	Threshold int           `mapstructure:"threshold"`
}

func TestEncodeInlinesSquashedEmbeddedStructs(t *testing.T) {
	in := struct {
		Balancer squashed `mapstructure:"balancer"`
	}{squashed{Numbers: squashedNumbers{Interval: 250 * time.Millisecond, Threshold: 3}, Name: "lb", Extra: []string{}}}
	n, err := encodeNode(reflect.ValueOf(in), "")
	if err != nil {
		t.Fatal(err)
	}
	data, err := yaml.Marshal(n)
	if err != nil {
		t.Fatal(err)
	}
	want := "balancer:\n    interval: 250ms\n    threshold: 3\n    name: lb\n    extra: []\n"
	if string(data) != want {
		t.Fatalf("encoded\n%s\nwant\n%s", data, want)
	}
	var raw map[string]any
	if err := yaml.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	back := in
	back.Balancer = squashed{}
	dec, err := mapstructure.NewDecoder(&mapstructure.DecoderConfig{Result: &back, DecodeHook: durationHook, ErrorUnused: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := dec.Decode(raw); err != nil {
		t.Fatalf("mapstructure does not read the encoding back: %v\n%s", err, data)
	}
	if !reflect.DeepEqual(in, back) {
		t.Fatalf("squashed round trip: %+v, want %+v", back, in)
	}
}

func TestEncodeRefusesATypeWithNoYAMLForm(t *testing.T) {
	in := struct {
		Section struct {
			Ready chan int `mapstructure:"ready"`
		} `mapstructure:"section"`
	}{}
	_, err := encodeNode(reflect.ValueOf(in), "")
	if err == nil || !strings.Contains(err.Error(), "key section.ready") {
		t.Fatalf("err = %v, want one naming key section.ready", err)
	}
}

// TestEncodeRoundTripsRandomValidConfigs generates configs from a fixed seed, every value
// within what Validate accepts most of the time (a few break a rule on purpose: they must be
// refused, and are skipped), and requires each valid one to load back from its encoding as it was.
func TestEncodeRoundTripsRandomValidConfigs(t *testing.T) {
	const n = 200
	r := rand.New(rand.NewSource(502))
	valid := 0
	for i := range n {
		cfg := randomConfig(r)
		if err := cfg.Validate(); err != nil {
			if testing.Verbose() {
				t.Logf("config %d refused: %v", i, err)
			}
			continue
		}
		data, err := Encode(cfg)
		if err != nil {
			t.Fatalf("config %d: Encode: %v", i, err)
		}
		if _, err := LoadBytes(data, "random"); err != nil {
			if strings.Contains(err.Error(), "watchdog.lock_path") {
				continue // a lock path some host would not use: refused by the loader, as it should be
			}
			t.Fatalf("config %d: valid, but its encoding does not load: %v\n%s", i, err, data)
		}
		roundTrip(t, fmt.Sprintf("random config %d", i), cfg)
		valid++
	}
	if valid < n/2 {
		t.Fatalf("only %d of %d random configs were valid; the generator must mostly make valid ones", valid, n)
	}
	t.Logf("%d of %d random configs valid and round-tripped", valid, n)
}

// randomConfig is a config with every field set to a random value, as LoadBytes would return it
// (list defaults applied, lists the defaults give as [] non-nil).
func randomConfig(r *rand.Rand) *Config {
	dur := func(max time.Duration) time.Duration { return time.Duration(1 + r.Int63n(int64(max))) }
	pick := func(xs ...string) string { return xs[r.Intn(len(xs))] }
	text := func() string {
		return pick("", "x", "a b", "yes", "null", "~", "0x1F", "1e3", "12", "-", "#hash", "a: b", "'q'", `"dq"`, `back\slash`,
			"{brace}", "[list]", "multi\nline", " lead", "trail ", "ünï", "@at", "*star", "%p", "!bang", "&amp")
	}
	c := Defaults()
	b := &c.Balancer
	b.Kind = pick(BalancerInHouse, BalancerALB, BalancerNone)
	if b.Kind == BalancerInHouse && r.Intn(3) == 0 {
		b.Admins = []string{fmt.Sprintf("127.0.0.11:%d", r.Intn(65536)), fmt.Sprintf("127.0.0.12:%d", r.Intn(65536))}
	}
	b.Listen = fmt.Sprintf("127.0.0.%d:%d", 1+r.Intn(250), r.Intn(65536))
	b.Admin = fmt.Sprintf("[::1]:%d", r.Intn(65536))
	b.AdminToken = text()
	b.HealthPath = "/" + pick("health", "healthz", "version.txt", "a%20b", "x:y")
	b.Interval = dur(time.Minute)
	b.Timeout = dur(b.Interval)
	b.UnhealthyThreshold = 1 + r.Intn(10)
	b.HealthyThreshold = 1 + r.Intn(10)
	b.IdleTimeout = dur(10 * time.Minute)
	b.ConnectTimeout = dur(5 * time.Second)
	b.HeaderTimeout = dur(30 * time.Second)
	b.MaxHeaderBytes = 1024 + r.Intn(1<<20)
	b.AcceptProxyFrom = []string{}
	for range r.Intn(3) {
		b.AcceptProxyFrom = append(b.AcceptProxyFrom, pick("10.0.0.0/8", "127.0.0.1", "::1", "fd00::/8", "192.168.1.7"))
	}
	b.TargetGroupARN = pick("", "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/abc")
	if b.Kind == BalancerALB && r.Intn(10) > 0 {
		b.TargetGroupARN = "arn:aws:elasticloadbalancing:eu-west-1:123456789012:targetgroup/web/abc"
	}
	b.Region = pick("", "eu-west-1", "us-east-2")
	b.DeregistrationDelay = dur(time.Minute) - 1
	b.SlowStart = dur(time.Minute) - 1

	c.Drain = Drain{Window: dur(time.Minute), Shutdown: dur(time.Minute), StopGrace: dur(2 * time.Minute), MaxRecovery: dur(time.Minute)}
	c.Watchdog.Interval = dur(time.Hour)
	c.Watchdog.HealAfter = 1 + r.Intn(10)
	c.Watchdog.CheckTimeout = dur(10 * time.Second)
	c.Watchdog.StateDir = pick("/var/lib/zero502", "/tmp/z 502", "/srv/zero502")
	if r.Intn(4) == 0 {
		c.Watchdog.LockPath = "/tmp/z.lock"
	}
	c.App.KeepAliveIdleTimeout = dur(time.Hour)
	if r.Intn(2) == 0 {
		c.Edge.Drain, c.Edge.DNSTTL = dur(time.Minute), dur(time.Minute)-1
		c.Edge.CheckInterval, c.Edge.UnhealthyThreshold = dur(10*time.Second), 1+r.Intn(5)
		c.Edge.Origins = []string{fmt.Sprintf("10.0.1.%d:8080", 1+r.Intn(250))}
	}
	c.Rollout = Rollout{Batch: 1 + r.Intn(4), Runtime: pick(RuntimeProcess, RuntimeDocker), HealthyDeadline: dur(5 * time.Minute),
		DockerHost: pick("", "unix:///var/run/docker.sock", "tcp://127.0.0.1:2375"), Strategy: pick(StopFirst, StartFirst),
		Bake: dur(time.Minute) - 1, LockPath: pick("", "/tmp/fleet.lock"), LockLease: dur(time.Hour), ProgressDeadline: dur(time.Hour), OnFailure: pick(OnFailureRollback, onFailureStop),
		Analysis: Analysis{Enabled: r.Intn(2) == 0, Window: dur(time.Minute), MinRequests: r.Intn(100),
			MaxErrorRate: float64(r.Intn(101)) / 100, MaxErrorRateIncrease: r.Float64(), MaxP99Increase: 3 * r.Float64(), MinP99Increase: dur(time.Second),
			OnNoTraffic: pick(OnNoTrafficPass, onNoTrafficFail), ExpectedRate: float64(r.Intn(3)) * 500 * r.Float64()}, // 0 (unknown) a third of the time
		Canary: Canary{Hosts: r.Intn(2), Weight: 1 + r.Intn(100), Duration: dur(time.Minute)},
		Alarms: []string{}}
	for i := range r.Intn(4) {
		c.Rollout.Alarms = append(c.Rollout.Alarms, fmt.Sprintf("%s-%d", pick("web-5xx", "p99 > 1s", "Composite/Health", "ünï:alarm", "a#b"), i))
	}

	services := r.Intn(4)
	for i := range services {
		s := Service{Name: fmt.Sprintf("svc-%d", i), Kind: KindApp, Image: pick("app:{version}", "registry.local:5000/app:{version}"),
			Drain: pick(DrainHandshake, DrainBalancer), StopSignal: pick(stopSignals...)}
		switch r.Intn(8) {
		case 0: // nil: left out, read back nil
		case 1:
			s.Command = []string{} // written as [], read back as an empty list, not nil
		default:
			for range 1 + r.Intn(4) {
				s.Command = append(s.Command, text())
			}
		}
		if r.Intn(5) > 0 {
			s.Port = 1 + r.Intn(30000)
			if c.Rollout.Strategy == StartFirst || r.Intn(3) == 0 {
				s.Ports = []int{s.Port, s.Port + 1 + r.Intn(100)}
			}
		}
		s.HealthPath = "/" + pick("health", "version.txt", "up")
		s.Health = ServiceHealth{Path: s.HealthPath, ExpectStatus: 100 + r.Intn(500), Timeout: dur(10 * time.Second)}
		if r.Intn(3) == 0 {
			s.Smoke = []SmokeRequest{{Method: pick("GET", "POST"), Path: "/" + pick("orders", "a%20b", "x?y=1"), Body: text(),
				ExpectStatus: 100 + r.Intn(500), ExpectBody: text(), Timeout: dur(10 * time.Second)}}
		}
		if r.Intn(2) == 0 {
			s.Verify = ServiceVerify{VersionHeader: pick("", "X-Version"), VersionPath: "/version", ExpectBody: text() + "{version}"}
		}
		if r.Intn(3) > 0 {
			s.Env = map[string]string{}
			for j := range r.Intn(4) {
				s.Env[pick("PATH_PREFIX", "mode", "Debug", "X")+fmt.Sprint(j)] = text()
			}
		}
		c.Services = append(c.Services, s)
	}
	if s := c.Services[r.Intn(services+1):]; len(s) > 0 && s[0].Port > 0 && r.Intn(2) == 0 {
		b.Service = s[0].Name // the balanced service has a port
	}
	for i := range r.Intn(5) {
		h := Host{Name: fmt.Sprintf("host-%d", i), Address: pick("127.0.0.1", "10.0.0.7", "web-1.internal"), PortOffset: 100 * i,
			SSH: pick("", "deploy@web-1:2222", "root@127.0.0.1"), Target: pick("", "i-0abc")}
		if r.Intn(2) == 0 {
			h.StateDir = fmt.Sprintf("/tmp/zero502/host-%d", i)
			h.LockPath = pick("", fmt.Sprintf("/tmp/zero502/host-%d.lock", i))
		}
		c.Hosts = append(c.Hosts, h)
	}
	return c
}
