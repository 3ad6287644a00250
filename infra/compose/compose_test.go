package compose_test

import (
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/compose"
	"github.com/zero502/zero502/infra/config"
)

const file = `
name: shop
services:
  web:
    image: registry.example.com/shop/web:${TAG:-latest}
    entrypoint: ["/app/web"]
    command: ["--listen", "0.0.0.0:8080"]
    environment:
      LOG_LEVEL: info
      REGION: ${REGION}
    env_file: web.env
    ports: ["8080:8080"]
    healthcheck:
      test: ["CMD", "curl", "-fsS", "http://localhost:8080/healthz"]
      timeout: 1s
    stop_signal: SIGQUIT
    stop_grace_period: 45s
    volumes: ["uploads:/var/uploads"]
    depends_on: [db]
    networks: [front]
    deploy:
      update_config: {order: stop-first, parallelism: 2}
  db:
    image: postgres:16
    healthcheck:
      test: ["CMD-SHELL", "pg_isready -U shop"]
    cap_add: [SYS_NICE]
  debug:
    image: busybox
    profiles: [debug]
volumes:
  uploads: {}
networks:
  front: {}
`

func write(t *testing.T, dir, name, data string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// A Compose file is read as docker compose reads it (interpolation from the environment given,
// env_file, profiles), its services become zero502's, and every key zero502 does not honour is
// a note naming the service, the key and what to do; the written config loads as it is.
func TestAComposeFileBecomesAConfigWithEveryKeyAccountedFor(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "web.env", "DB_HOST=db.internal\n")
	path := write(t, dir, "compose.yaml", file)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"TAG=v7", "REGION=eu-west-1"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(im.Services) != 2 || im.Services[0].Name != "db" || im.Services[1].Name != "web" {
		t.Fatalf("services %+v; want db and web (debug is in a profile not enabled)", im.Services)
	}
	web := im.Services[1]
	if web.Image != "registry.example.com/shop/web:v7" {
		t.Errorf("image %q; want ${TAG} interpolated to v7", web.Image)
	}
	if !slices.Equal(web.Command, []string{"/app/web", "--listen", "0.0.0.0:8080"}) {
		t.Errorf("command %q; want the entrypoint, then the command", web.Command)
	}
	if web.Env["LOG_LEVEL"] != "info" || web.Env["DB_HOST"] != "db.internal" || len(web.Env) != 2 {
		t.Errorf("env %v; want the environment and the env_file's", web.Env)
	}
	if !slices.Equal(web.Secrets, []string{"REGION"}) { // REGION: ${REGION}, taken from the shell at `up`
		t.Errorf("secrets %v; want [REGION]", web.Secrets)
	}
	if web.Port != 8080 || web.Health.Path != "/healthz" || web.Health.Timeout != time.Second || web.StopSignal != "SIGQUIT" || web.Drain != config.DrainBalancer {
		t.Errorf("web %+v; want port 8080, health /healthz within 1s, SIGQUIT, drained at the balancer", web)
	}
	if im.Strategy != config.StopFirst || im.Batch != 2 || im.StopGrace != 45*time.Second {
		t.Errorf("strategy %q batch %d stop grace %s; want stop-first, 2, 45s", im.Strategy, im.Batch, im.StopGrace)
	}
	all := notesText(im)
	requireNotes(t, all,
		"services.web.volumes: not mounted, bind mounts and named volumes alike: zero502 keeps each VOLUME the image declares across deploys and heals in a named volume per host and service, zero502-<host>-<service>-<path>-<hash>",
		"services.web.image: registry.example.com/shop/web:v7 names no {version}",
		"services.web.depends_on: ",
		"services.web.networks: ",
		"services.web.entrypoint: ",
		"services.web.env_file: ",
		"services.db.healthcheck: \"CMD-SHELL pg_isready -U shop\" is not an HTTP check",
		"services.db.cap_add: zero502 does not set this",
		"volumes: not created and not mounted: zero502 keeps each VOLUME a service's image declares",
		"networks: zero502 creates no networks",
	)

	if strings.Contains(all, "services.db.networks") {
		t.Errorf("notes name keys the file did not set, or that were honoured:\n%s", all)
	}

	data, err := compose.Write(im, "compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.LoadBytes(data, "the imported config")
	if err != nil {
		t.Fatalf("the written config does not load: %v\n%s", err, data)
	}
	if s, ok := cfg.BalancedService(); !ok || s.Name != "web" || cfg.Rollout.Batch != 2 || cfg.Drain.StopGrace != 45*time.Second || cfg.Rollout.Runtime != config.RuntimeDocker {
		t.Fatalf("loaded: balanced %+v, batch %d, stop grace %s, runtime %s\n%s", s, cfg.Rollout.Batch, cfg.Drain.StopGrace, cfg.Rollout.Runtime, data)
	}
	if !strings.Contains(string(data), "#   services.web.volumes: ") {
		t.Errorf("the written config does not say what was not honoured:\n%s", data)
	}

	// the debug profile enables its service
	im, err = compose.Load(context.Background(), path, compose.Options{Env: []string{"REGION=x"}, Profiles: []string{"debug"}})
	if err != nil || len(im.Services) != 3 {
		t.Fatalf("with --profile debug: %v, %d services; want 3", err, len(im.Services))
	}
}

// start-first becomes the rollout strategy, with the service's two ports.
func TestStartFirstGivesTheServiceItsTwoPorts(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  api:
    image: api:1
    ports: ["9000:9000"]
    healthcheck: {test: "wget -qO- http://127.0.0.1:9000/ready || exit 1"}
    deploy: {update_config: {order: start-first}}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	api := im.Services[0]
	if im.Strategy != config.StartFirst || !slices.Equal(api.Ports, []int{9000, 9001}) || api.Health.Path != "/ready" {
		t.Fatalf("strategy %q, api %+v; want start-first, ports [9000 9001], health /ready", im.Strategy, api)
	}
	data, err := compose.Write(im, "compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadBytes(data, "the imported config"); err != nil {
		t.Fatalf("the written config does not load: %v\n%s", err, data)
	}
}

// A file the Compose loader refuses is an error naming the file.
func TestABrokenComposeFileIsRefusedNamingIt(t *testing.T) {
	path := write(t, t.TempDir(), "compose.yaml", "services:\n  web:\n    ports: [\"not-a-port\"]\n")
	if _, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}}); err == nil || !strings.Contains(err.Error(), path) {
		t.Fatalf("Load = %v; want an error naming %s", err, path)
	}
}

// services_from: a config's services are read from a Compose file beside it at load, and the
// loaded config carries them itself (services_from cleared), so what a host gets over ssh
// loads without the file. Beside services:, or naming a file that is not there, it is refused
// naming the key.
func TestServicesFromReadsTheComposeFileAtLoad(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "compose.yaml", "services:\n  web:\n    image: shop/web:${TAG:-v1}\n    ports: [\"8080:8080\"]\n    healthcheck: {test: [CMD, curl, -f, \"http://localhost:8080/up\"]}\n")
	base := "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\n"
	cfg, err := config.Load(write(t, dir, "zero502.yaml", base+"services_from: compose.yaml\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(cfg.Services) != 1 || cfg.Services[0].Image != "shop/web:v1" || cfg.Services[0].Port != 8080 || cfg.Services[0].Health.Path != "/up" || cfg.ServicesFrom != "" {
		t.Fatalf("services %+v, services_from %q; want web from the Compose file, services_from cleared", cfg.Services, cfg.ServicesFrom)
	}
	data, err := config.Encode(cfg)
	if err != nil {
		t.Fatal(err)
	}
	again, err := config.LoadBytes(data, filepath.Join(t.TempDir(), "sent.yaml")) // a host's, without the Compose file
	if err != nil || len(again.Services) != 1 || again.Services[0].Image != "shop/web:v1" {
		t.Fatalf("the encoded config: %v, %+v; want it to load with web", err, again)
	}

	for _, tc := range []struct{ name, yaml, want string }{
		{"beside services", base + "services_from: compose.yaml\nservices: [{name: api, image: api:1}]\n", "services_from: compose.yaml: is set beside services"},
		{"a missing file", base + "services_from: nowhere.yaml\n", "services_from nowhere.yaml: "},
	} {
		if _, err := config.Load(write(t, dir, "bad.yaml", tc.yaml)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v; want an error with %q", tc.name, err, tc.want)
		}
	}
}

// Root reads services_from only from a Compose file that is root's alone, as it reads the config
// itself: the file names the images, commands, users and environment a deploy runs as root, so
// one another user could change (written by others, or owned by another user) is refused naming
// the key, the file and why, before a service of it is taken.
func TestRootReadsServicesFromOnlyAComposeFileThatIsRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rule is root's: run as root")
	}
	const body = "services:\n  web:\n    image: shop/web:v1\n    command: [/bin/web]\n    user: root\n    ports: [\"8080:8080\"]\n"
	for _, tc := range []struct {
		what  string
		setup func(path string) error
		says  string
	}{
		{"written by anyone", func(path string) error { return os.Chmod(path, 0o666) }, "mode 0666"},
		{"owned by another user", func(path string) error { return os.Chown(path, 4321, 4321) }, "uid 4321"},
	} {
		dir := t.TempDir()
		compose := write(t, dir, "compose.yaml", body)
		if err := tc.setup(compose); err != nil {
			t.Fatal(err)
		}
		cfg := write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n")
		_, err := config.Load(cfg)
		if err == nil {
			t.Errorf("services_from naming a Compose file %s loaded as root; want it refused", tc.what)
			continue
		}
		for _, want := range []string{"services_from", compose, tc.says, "root's alone"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("a Compose file %s: %q does not say %q", tc.what, err, want)
			}
		}
	}
}

// What the Compose file's services are read from besides the file itself (the .env beside it,
// which interpolation and COMPOSE_PROFILES read, and each env_file) is as much the deploy's as the
// file: as root, one another user could change is refused naming the file, as the file would be.
func TestRootReadsServicesFromOnlyEnvFilesThatAreRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rule is root's: run as root")
	}
	const body = "services:\n  web:\n    image: shop/web:${TAG}\n    env_file: web.env\n    ports: [\"8080:8080\"]\n"
	for _, tc := range []struct {
		what, file string
		setup      func(path string) error
		says       string
	}{
		{".env written by anyone", ".env", func(path string) error { return os.Chmod(path, 0o666) }, "mode 0666"},
		{".env owned by another user", ".env", func(path string) error { return os.Chown(path, 4321, 4321) }, "uid 4321"},
		{"an env_file written by anyone", "web.env", func(path string) error { return os.Chmod(path, 0o666) }, "mode 0666"},
		{"an env_file owned by another user", "web.env", func(path string) error { return os.Chown(path, 4321, 4321) }, "uid 4321"},
	} {
		dir := t.TempDir()
		write(t, dir, "compose.yaml", body)
		write(t, dir, ".env", "TAG=v1\n")
		write(t, dir, "web.env", "LOG_LEVEL=info\n")
		if err := tc.setup(filepath.Join(dir, tc.file)); err != nil {
			t.Fatal(err)
		}
		cfg := write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n")
		_, err := config.Load(cfg)
		if err == nil {
			t.Errorf("services_from with %s loaded as root; want it refused", tc.what)
			continue
		}
		for _, want := range []string{"services_from", filepath.Join(dir, tc.file), tc.says, "root's alone"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", tc.what, err, want)
			}
		}
	}
	// root's own files pass, and so does the empty env_file /dev/null (a device others may write)
	dir := t.TempDir()
	write(t, dir, "compose.yaml", "services:\n  web:\n    image: shop/web:${TAG}\n    env_file: [web.env, /dev/null]\n    ports: [\"8080:8080\"]\n")
	write(t, dir, ".env", "TAG=v1\n")
	write(t, dir, "web.env", "LOG_LEVEL=info\n")
	cfg := write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n")
	c, err := config.Load(cfg)
	if err != nil {
		t.Fatalf("services_from with root's own .env and env_file, and /dev/null: %v", err)
	}
	if c.Services[0].Image != "shop/web:v1" || c.Services[0].Env["LOG_LEVEL"] != "info" {
		t.Errorf("services %+v; want image shop/web:v1 and LOG_LEVEL=info", c.Services)
	}
}

// The Compose files a services_from file includes or extends, however deep, and the .env beside
// an included one, are read as the file itself is: as root, one another user could change is
// refused naming it.
func TestRootReadsServicesFromOnlyIncludedAndExtendedFilesThatAreRootsAlone(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the rule is root's: run as root")
	}
	const svc = "services:\n  web:\n    image: shop/web:{version}\n    ports: [\"8080:8080\"]\n"
	for _, tc := range []struct {
		what    string
		compose string
		others  map[string]string
		bad     string // the file then made writable by anyone
		says    string
	}{
		{"an extends file", "services:\n  web:\n    extends: {file: base.yaml, service: web}\n",
			map[string]string{"base.yaml": svc}, "base.yaml", "mode 0666"},
		{"an included file", "include: [inc.yaml]\n",
			map[string]string{"inc.yaml": svc}, "inc.yaml", "mode 0666"},
		{"the .env of an included project", "include: [sub/inc.yaml]\n",
			map[string]string{"sub/inc.yaml": "services:\n  web:\n    image: shop/web:${TAG}\n    ports: [\"8080:8080\"]\n", "sub/.env": "TAG=v1\n"},
			"sub/.env", "mode 0666"},
		{"a file an extended file extends", "services:\n  web:\n    extends: {file: base.yaml, service: web}\n",
			map[string]string{"base.yaml": "services:\n  web:\n    extends: {file: deeper.yaml, service: web}\n", "deeper.yaml": svc},
			"deeper.yaml", "mode 0666"},
	} {
		dir := t.TempDir()
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		write(t, dir, "compose.yaml", tc.compose)
		for name, body := range tc.others {
			write(t, dir, name, body)
		}
		cfg := write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n")
		if _, err := config.Load(cfg); err != nil {
			t.Fatalf("%s: root's own files refused: %v", tc.what, err)
		}
		if err := os.Chmod(filepath.Join(dir, tc.bad), 0o666); err != nil {
			t.Fatal(err)
		}
		_, err := config.Load(cfg)
		if err == nil {
			t.Errorf("services_from with %s written by anyone loaded as root; want it refused", tc.what)
			continue
		}
		for _, want := range []string{"services_from", filepath.Join(dir, tc.bad), tc.says, "root's alone"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %q does not say %q", tc.what, err, want)
			}
		}
	}
}

// A variable a Compose file lists without a value (Compose takes it from the shell at `up` time)
// is a secret: one of services[].secrets, found when the deploy starts. Its value, which this
// shell holds, goes into no env and no written config.
func TestAVariableWithoutAValueIsASecret(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: shop/web:{version}
    ports: ["8080:8080"]
    environment: [DB_PASSWORD, "PLAIN=1"]
  worker:
    image: shop/worker:{version}
    environment:
      API_KEY:
      MODE: batch
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"DB_PASSWORD=hunter2", "API_KEY=sk-live-1"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range im.Services {
		want := map[string][]string{"web": {"DB_PASSWORD"}, "worker": {"API_KEY"}}[svc.Name]
		if !slices.Equal(svc.Secrets, want) {
			t.Errorf("%s: secrets %v, want %v", svc.Name, svc.Secrets, want)
		}
		for k, v := range svc.Env {
			if v == "hunter2" || v == "sk-live-1" || k == "DB_PASSWORD" || k == "API_KEY" {
				t.Errorf("%s: env %s=%q holds a secret", svc.Name, k, v)
			}
		}
	}
	data, err := compose.Write(im, path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), "hunter2") || strings.Contains(string(data), "sk-live-1") || !strings.Contains(string(data), "DB_PASSWORD") {
		t.Errorf("the written config holds a value, or lacks the secret's name:\n%s", data)
	}
}

// The shipped example (examples/compose: a three-service app and a short zero502.yaml) loads:
// web behind the balancer, api with its env_file's values and its Compose healthcheck as an HTTP
// check, a worker without a port; and every key zero502 does not honour as Compose would is a
// note the config carries to the deploy, the rollout numbers of update_config and
// stop_grace_period among them (services_from leaves those to the zero502 config).
func TestTheShippedComposeExampleLoadsWithEveryIgnoredKeyNoted(t *testing.T) {
	t.Setenv("IMAGE", "")
	t.Setenv("WEB_PORT", "")
	t.Setenv("API_PORT", "")
	cfg, err := config.Load(filepath.Join("..", "..", "examples", "compose", "zero502.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]config.Service{}
	for _, s := range cfg.Services {
		byName[s.Name] = s
	}
	web, api, worker := byName["web"], byName["api"], byName["worker"]
	if len(cfg.Services) != 3 || web.Port != 8080 || web.Health.Path != "/health" || web.Image != "zero502:{version}" {
		t.Errorf("services %+v; want api, web (port 8080, health /health, image zero502:{version}) and worker", cfg.Services)
	}
	if api.Port != 9090 || api.Health.Path != "/health" || api.Env["ORDERS_REGION"] != "eu-west-1" || api.Env["LOG_FORMAT"] != "json" {
		t.Errorf("api %+v; want port 9090, health /health, env from api.env and environment", api)
	}
	if worker.Port != 0 || worker.Env["QUEUE"] != "orders" {
		t.Errorf("worker %+v; want no port, QUEUE=orders", worker)
	}
	if s, _ := cfg.BalancedService(); s.Name != "web" {
		t.Errorf("the balanced service is %q, want web (balancer.service)", s.Name)
	}
	notes := strings.Join(cfg.ComposeNotes, "\n")
	for _, key := range []string{"volumes: ", "services.worker.volumes: ", "services.api.env_file: ", "services.api.healthcheck: ",
		"services.web.healthcheck: ", "services.web.depends_on: ", "services.web.restart: ", "services.api.restart: ",
		"services.worker.restart: ", "deploy.update_config.order: ", "deploy.update_config.parallelism: ", "stop_grace_period: "} {
		if !strings.Contains(notes, key) {
			t.Errorf("no note for %s; the notes:\n%s", key, notes)
		}
	}
}

// ${VAR} takes its value from the .env file beside the Compose file, as `docker compose` does,
// and the environment overrides it.
func TestInterpolationReadsTheDotEnvBesideTheFile(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, ".env", "TAG=v7\nWEB_PORT=7001\n")
	path := write(t, dir, "compose.yaml", "services:\n  web:\n    image: shop/web:${TAG:-v1}\n    ports: [\"${WEB_PORT:-8080}:${WEB_PORT:-8080}\"]\n")
	for _, tc := range []struct {
		env   []string
		image string
		port  int
	}{
		{[]string{}, "shop/web:v7", 7001},
		{[]string{"WEB_PORT=7002"}, "shop/web:v7", 7002},
	} {
		im, err := compose.Load(context.Background(), path, compose.Options{Env: tc.env})
		if err != nil {
			t.Fatal(err)
		}
		if web := im.Services[0]; web.Image != tc.image || web.Port != tc.port {
			t.Errorf("env %v: image %q, port %d; want %q, %d", tc.env, web.Image, web.Port, tc.image, tc.port)
		}
	}
}

// Every deploy key zero502 does not honour, and a healthcheck's start_period and start_interval,
// is a note naming the key and what zero502 does instead: none is dropped silently.
func TestEveryDeployAndHealthcheckKeyNotHonouredIsNoted(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: shop/web:{version}
    ports: ["8080:8080"]
    healthcheck:
      test: [CMD, curl, -f, "http://localhost:8080/up"]
      interval: 5s
      retries: 3
      start_period: 40s
      start_interval: 2s
    deploy:
      mode: replicated
      replicas: 1
      endpoint_mode: dnsrr
      labels: {team: shop}
      resources:
        limits: {cpus: "0.5", memory: 512M}
        reservations: {memory: 128M}
      restart_policy: {condition: on-failure, max_attempts: 3}
      placement: {constraints: ["node.role == worker"]}
      update_config: {order: stop-first, parallelism: 1, delay: 10s, failure_action: pause, monitor: 30s, max_failure_ratio: 0.2}
      rollback_config: {parallelism: 1, order: stop-first}
  job:
    image: shop/job:{version}
    deploy: {mode: replicated-job}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	all := notesText(im)
	requireNotes(t, all,
		"services.web.deploy.resources.limits.cpus: 0.5: zero502 sets no",
		"services.web.deploy.resources.limits.memory: 512M: zero502 sets no",
		"services.web.deploy.resources.reservations.memory: 128M: zero502 sets no",
		"services.web.deploy.restart_policy: zero502's watchdog heals",
		"services.web.deploy.placement: zero502 runs every service on every host",
		"services.web.deploy.update_config.delay: 10s: ",
		"services.web.deploy.update_config.failure_action: pause: ",
		"services.web.deploy.update_config.monitor: 30s: ",
		"services.web.deploy.update_config.max_failure_ratio: 0.2: ",
		"services.web.deploy.rollback_config: ",
		"services.web.deploy.labels: ",
		"services.web.deploy.endpoint_mode: dnsrr: ",
		"services.job.deploy.mode: replicated-job: ",
		"services.web.healthcheck.start_period: 40s: ",
		"services.web.healthcheck.start_interval: 2s: ",
	)
	for _, honoured := range []string{"services.web.deploy.mode", "services.web.deploy.replicas", "deploy.update_config.order", "deploy.update_config.parallelism"} {
		if strings.Contains(all, honoured) {
			t.Errorf("notes name %s, which was honoured:\n%s", honoured, all)
		}
	}
}

// The rollout strategy is the fleet's: a service that sorts before the one asking for
// start-first gets its two ports too, and the written config loads.
func TestStartFirstGivesEveryServiceWithAPortItsTwoPorts(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  api:
    image: api:{version}
    ports: ["9000:9000"]
  web:
    image: web:{version}
    ports: ["8080:8080"]
    deploy: {update_config: {order: start-first}}
  worker:
    image: worker:{version}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]int{"api": {9000, 9001}, "web": {8080, 8081}, "worker": nil}
	for _, s := range im.Services {
		if !slices.Equal(s.Ports, want[s.Name]) {
			t.Errorf("%s: ports %v; want %v", s.Name, s.Ports, want[s.Name])
		}
	}
	data, err := compose.Write(im, "compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := config.LoadBytes(data, "the imported config"); err != nil {
		t.Fatalf("the written config does not load: %v\n%s", err, data)
	}
}

// zero502 balances TCP and HTTP only: a UDP port is never the service's port, and every port
// note keeps the port's protocol.
func TestAUDPPortIsNotTheServicesPort(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  dns:
    image: dns:{version}
    ports: ["5353:5353/udp", "8080:8080", "53:53/udp", "9090:9090"]
  udponly:
    image: udp:{version}
    ports: ["5353:5353/udp"]
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	dns, udp := im.Services[0], im.Services[1]
	if dns.Port != 8080 || dns.Drain != config.DrainBalancer {
		t.Errorf("dns %+v; want port 8080 (the first TCP port), drained at the balancer", dns)
	}
	if udp.Port != 0 || udp.Drain != "" {
		t.Errorf("udponly %+v; want no port (its only port is UDP)", udp)
	}
	all := notesText(im)
	requireNotes(t, all,
		"services.dns.ports: 5353:5353/udp: zero502 balances TCP and HTTP only",
		"services.dns.ports: 53:53/udp: zero502 balances TCP and HTTP only",
		"services.dns.ports: only the first published TCP port is balanced: 9090:9090/tcp is not published",
		"services.udponly.ports: 5353:5353/udp: zero502 balances TCP and HTTP only",
	)
	data, err := compose.Write(im, "compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if cfg, err := config.LoadBytes(data, "the imported config"); err != nil {
		t.Fatalf("the written config does not load: %v\n%s", err, data)
	} else if s, _ := cfg.BalancedService(); s.Name != "dns" || s.Port != 8080 {
		t.Errorf("balanced %+v; want dns on 8080\n%s", s, data)
	}
}

// An empty entrypoint or command (Compose: clear the image's) is a note: zero502's docker
// runtime keeps the image's ENTRYPOINT, and an empty command keeps its CMD.
func TestAClearedEntrypointOrCommandIsNoted(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  list:
    image: a:{version}
    entrypoint: []
    command: ["sh", "-c", "echo hi"]
  str:
    image: b:{version}
    entrypoint: ""
    command: []
  kept:
    image: c:{version}
    command: ["run"]
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	all := notesText(im)
	requireNotes(t, all,
		"services.list.entrypoint: cleared in Compose; zero502's docker runtime keeps the image's ENTRYPOINT",
		"services.str.entrypoint: cleared in Compose; zero502's docker runtime keeps the image's ENTRYPOINT",
		"services.str.command: cleared in Compose; zero502's docker runtime keeps the image's CMD",
	)
	if strings.Contains(all, "services.kept.entrypoint") || strings.Contains(all, "services.kept.command") || strings.Contains(all, "services.list.command") {
		t.Errorf("notes name an entrypoint or command the file did not clear:\n%s", all)
	}
}

// notesText is im's notes, one per line, as they are written at the top of the config.
func notesText(im *compose.Import) string {
	var notes []string
	for _, n := range im.Notes {
		notes = append(notes, n.String())
	}
	return strings.Join(notes, "\n")
}

// requireNotes fails t for each of want that the notes (notesText) do not say.
func requireNotes(t *testing.T, all string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(all, w) {
			t.Errorf("notes lack %q:\n%s", w, all)
		}
	}
}

// A Compose health check zero502 does not run (disabled, test: [NONE], or not HTTP) is a note
// that says how the service is judged instead: a service with a port by a GET of the default
// health path on that port, one without by its container's state. A long-syntax port's name and
// app_protocol, and parallelism 0 (Swarm: all at once), are notes too.
func TestAHealthCheckNotTakenSaysWhatJudgesTheServiceInstead(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  api:
    image: api:{version}
    ports:
      - {target: 9090, published: "9090", name: api-http, app_protocol: http}
    healthcheck: {disable: true}
    deploy: {update_config: {parallelism: 0}}
  none:
    image: none:{version}
    ports: ["8081:8081"]
    healthcheck: {test: ["NONE"]}
  pg:
    image: pg:{version}
    ports: ["5432:5432"]
    healthcheck: {test: ["CMD", "pg_isready"]}
  worker:
    image: worker:{version}
    healthcheck: {test: ["CMD", "pgrep", "worker"]}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	all := notesText(im)
	requireNotes(t, all,
		"services.api.healthcheck: disabled in Compose: the deployer, the watchdog and the balancer GET the default health path (balancer.health_path, /health unless set) on port 9090",
		"services.none.healthcheck: disabled in Compose: the deployer, the watchdog and the balancer GET the default health path (balancer.health_path, /health unless set) on port 8081",
		`services.pg.healthcheck: "CMD pg_isready" is not an HTTP check zero502 can run: the deployer, the watchdog and the balancer GET the default health path (balancer.health_path, /health unless set) on port 5432`,
		`services.worker.healthcheck: "CMD pgrep worker" is not an HTTP check zero502 can run: the service has no port, so it is judged by its container's state only`,
		"services.api.ports: 9090:9090: name api-http: zero502 keeps no port names",
		"services.api.ports: 9090:9090: app_protocol http: zero502 does not read it",
		"services.api.deploy.update_config.parallelism: 0 (Swarm: every task at once)",
	)
	if strings.Contains(all, "mode ingress") {
		t.Errorf("a note names the port mode compose-go filled in:\n%s", all)
	}
	for _, s := range im.Services {
		if s.Health.Path != "" {
			t.Errorf("%s: health path %q; want none set (the default applies)", s.Name, s.Health.Path)
		}
	}
	if im.Batch != 0 {
		t.Errorf("batch %d; want 0 (left to the config) for parallelism 0", im.Batch)
	}
}

// Compose's healthcheck replaces the image's HEALTHCHECK (disable: true and test: [NONE] turn it
// off), but zero502 runs the container with the image's, whose unhealthy fails a deploy and has the
// watchdog heal the instance: every healthcheck note says so, or a service whose image's check does
// not fit would fail where the note says only zero502's GET judges it.
func TestAHealthCheckNoteSaysTheImagesHealthcheckStillRuns(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  api:
    image: api:{version}
    ports: ["9090:9090"]
    healthcheck: {disable: true}
  none:
    image: none:{version}
    ports: ["8081:8081"]
    healthcheck: {test: ["NONE"]}
  pg:
    image: pg:{version}
    ports: ["5432:5432"]
    healthcheck: {test: ["CMD", "pg_isready"]}
  web:
    image: web:{version}
    ports: ["8080:8080"]
    healthcheck: {test: ["CMD", "curl", "-f", "http://localhost:8080/up"]}
  worker:
    image: worker:{version}
    healthcheck: {test: ["CMD", "pgrep", "worker"]}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"api", "none", "pg", "web", "worker"} {
		found := false
		for _, n := range im.Notes {
			if n.Service == name && n.Key == "healthcheck" {
				found = true
				if !strings.Contains(n.What, "image's own HEALTHCHECK") {
					t.Errorf("%s: the note does not say the image's HEALTHCHECK still runs: %s", name, n)
				}
			}
		}
		if !found {
			t.Errorf("%s: no healthcheck note:\n%s", name, notesText(im))
		}
	}
}

// A secret (a variable a service lists without a value) interpolated into a health check zero502
// does not run is shown in the note as ${NAME}, never as its value: the notes are printed by
// init --from-compose, written into the config and reported by a deploy (services_from).
func TestASecretInAHealthCheckNoteIsShownAsItsName(t *testing.T) {
	const value = "Mysql-Root-Pw-7f3a"
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  db:
    image: mysql:{version}
    ports: ["3306:3306"]
    environment: [MYSQL_ROOT_PASSWORD]
    healthcheck:
      test: ["CMD", "mysqladmin", "ping", "-uroot", "-p${MYSQL_ROOT_PASSWORD}"]
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"MYSQL_ROOT_PASSWORD=" + value}})
	if err != nil {
		t.Fatal(err)
	}
	all := notesText(im)
	requireNotes(t, all, `services.db.healthcheck: "CMD mysqladmin ping -uroot -p${MYSQL_ROOT_PASSWORD}" is not an HTTP check`)
	if strings.Contains(all, value) {
		t.Errorf("a note holds the secret's value:\n%s", all)
	}
	if !slices.Equal(im.Services[0].Secrets, []string{"MYSQL_ROOT_PASSWORD"}) {
		t.Errorf("secrets %v; want [MYSQL_ROOT_PASSWORD]", im.Services[0].Secrets)
	}
	data, err := compose.Write(im, path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(data), value) || !strings.Contains(string(data), "-p${MYSQL_ROOT_PASSWORD}") {
		t.Errorf("the written config holds the secret's value, or lacks the note naming it:\n%s", data)
	}

	// services_from: the notes a deploy reports
	t.Setenv("MYSQL_ROOT_PASSWORD", value)
	cfg, err := config.Load(write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n"))
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(cfg.ComposeNotes, "\n")
	if strings.Contains(notes, value) || !strings.Contains(notes, "-p${MYSQL_ROOT_PASSWORD}") {
		t.Errorf("services_from's notes hold the secret's value, or lack the note naming it:\n%s", notes)
	}
}

// A secret interpolated into anything the import writes (the command, the entrypoint, the image,
// another variable's value, an env_file's, the user, the health check's path) is refused with an
// error naming the Compose field, the secret and the rule; nothing of it (nor an error of the
// Compose loader about such a field) holds the value.
func TestASecretInterpolatedIntoTheConfigIsRefused(t *testing.T) {
	const value = "Redis-Pw-9c1e"
	rule := "a secret reaches the container only as its environment variable"
	for _, tc := range []struct{ name, service, want string }{
		{"command", `command: [redis-server, --requirepass, "${REDIS_PASSWORD}"]`, "services.cache.command: interpolates secret REDIS_PASSWORD: " + rule},
		{"entrypoint", `entrypoint: ["/run", "--pass=${REDIS_PASSWORD:-none}"]`, "services.cache.entrypoint: interpolates secret REDIS_PASSWORD: " + rule},
		{"image", `image: "redis:${REDIS_PASSWORD}"`, "services.cache.image: interpolates secret REDIS_PASSWORD: " + rule},
		{"environment", `environment: {URL: "redis://:${REDIS_PASSWORD}@cache"}`, "services.cache.environment.URL: interpolates secret REDIS_PASSWORD: " + rule},
		{"env_file", `env_file: cache.env`, "services.cache.env_file (URL): interpolates secret REDIS_PASSWORD: " + rule},
		{"user", `user: "${REDIS_PASSWORD}"`, "services.cache.user: interpolates secret REDIS_PASSWORD: " + rule},
		{"health path", `healthcheck: {test: [CMD, curl, -f, "http://localhost:6379/${REDIS_PASSWORD}"]}`, "services.cache.healthcheck.test: interpolates secret REDIS_PASSWORD: " + rule},
		{"a loader error", `stop_grace_period: "${REDIS_PASSWORD}"`, "${REDIS_PASSWORD}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "cache.env", "URL=redis://:${REDIS_PASSWORD}@cache\n")
			path := write(t, dir, "compose.yaml", `
services:
  cache:
    image: redis:{version}
    ports: ["6379:6379"]
  app:
    image: app:{version}
    environment: [REDIS_PASSWORD]
`)
			data, _ := os.ReadFile(path)
			write(t, dir, "compose.yaml", strings.Replace(string(data), "    image: redis:{version}\n", "    image: redis:{version}\n    "+tc.service+"\n", 1))
			if strings.HasPrefix(tc.service, "image:") {
				data, _ := os.ReadFile(path)
				write(t, dir, "compose.yaml", strings.Replace(string(data), "    image: redis:{version}\n", "", 1))
			}
			im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"REDIS_PASSWORD=" + value}})
			if err == nil {
				t.Fatalf("Load took the file: services %+v, notes:\n%s", im.Services, notesText(im))
			}
			if !strings.Contains(err.Error(), tc.want) || strings.Contains(err.Error(), value) {
				t.Errorf("Load = %v; want an error with %q, without the secret's value", err, tc.want)
			}
		})
	}
}

// A variable that is no secret is interpolated into the command, the image and the environment as
// Compose does, beside a secret the file lists.
func TestANonSecretVariableIsInterpolatedAsBefore(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  cache:
    image: redis:${REDIS_TAG}
    command: [redis-server, --maxmemory, "${REDIS_MAXMEMORY}"]
    environment:
      - REDIS_PASSWORD
      - MAXMEMORY=${REDIS_MAXMEMORY}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"REDIS_TAG=7.2", "REDIS_MAXMEMORY=256mb", "REDIS_PASSWORD=x"}})
	if err != nil {
		t.Fatal(err)
	}
	c := im.Services[0]
	if c.Image != "redis:7.2" || !slices.Equal(c.Command, []string{"redis-server", "--maxmemory", "256mb"}) || c.Env["MAXMEMORY"] != "256mb" || !slices.Equal(c.Secrets, []string{"REDIS_PASSWORD"}) {
		t.Errorf("cache %+v; want the variables interpolated, REDIS_PASSWORD a secret", c)
	}
}

// A secret is found by where its name is interpolated, never by its value: one whose value is
// "1" leaves every other 1 of the file as it is.
func TestAShortSecretValueCausesNoFalseRefusal(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "web.env", "WORKERS=1\n")
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: web:1.{version}
    command: ["/web", "--workers", "1", "--level=${LEVEL}"]
    user: "1001"
    ports: ["8081:8081"]
    environment: [FEATURE_FLAG, "REPLICAS=1"]
    env_file: web.env
    healthcheck: {test: [CMD, curl, -f, "http://localhost:8081/v1/health"]}
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"FEATURE_FLAG=1", "LEVEL=1"}})
	if err != nil {
		t.Fatal(err)
	}
	web := im.Services[0]
	if web.Image != "web:1.{version}" || !slices.Equal(web.Command, []string{"/web", "--workers", "1", "--level=1"}) || web.User != "1001" ||
		web.Port != 8081 || web.Env["REPLICAS"] != "1" || web.Env["WORKERS"] != "1" || web.Health.Path != "/v1/health" || !slices.Equal(web.Secrets, []string{"FEATURE_FLAG"}) {
		t.Errorf("web %+v; want every 1 kept, FEATURE_FLAG a secret", web)
	}
	if all := notesText(im); strings.Contains(all, "${FEATURE_FLAG}") {
		t.Errorf("a note names the secret where the file does not:\n%s", all)
	}
}

// A variable set to its own value (NAME: ${NAME}, - NAME=$NAME, ${NAME:?…}) is taken from the
// shell at `up` as one listed without a value is: a secret, its value in no env and no written
// config. One with a default of the file's (${NAME:-…}) is a value, interpolated as before.
func TestAVariableSetToItselfIsASecret(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: shop/web:{version}
    ports: ["8080:8080"]
    environment:
      DB_PASSWORD: ${DB_PASSWORD}
      API_TOKEN: ${API_TOKEN:?set API_TOKEN}
      LEVEL: ${LEVEL:-info}
  worker:
    image: shop/worker:{version}
    environment: ["SIGNING_KEY=$SIGNING_KEY", "MODE=batch"]
`)
	env := []string{"DB_PASSWORD=hunter2", "API_TOKEN=tok-live-7", "SIGNING_KEY=sk-live-1", "LEVEL=debug"}
	im, err := compose.Load(context.Background(), path, compose.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"web": {"API_TOKEN", "DB_PASSWORD"}, "worker": {"SIGNING_KEY"}}
	for _, svc := range im.Services {
		if !slices.Equal(svc.Secrets, want[svc.Name]) {
			t.Errorf("%s: secrets %v, want %v", svc.Name, svc.Secrets, want[svc.Name])
		}
		for _, s := range want[svc.Name] {
			if _, ok := svc.Env[s]; ok {
				t.Errorf("%s: env holds secret %s", svc.Name, s)
			}
		}
	}
	if im.Services[0].Env["LEVEL"] != "debug" {
		t.Errorf("web env %v; want LEVEL=debug interpolated as before", im.Services[0].Env)
	}
	data, err := compose.Write(im, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"hunter2", "tok-live-7", "sk-live-1", "zero502secret"} {
		if strings.Contains(string(data), v) {
			t.Errorf("the written config holds %q:\n%s", v, data)
		}
	}
}

// A required variable (${VAR:?…}, as Compose files write them) that the environment sets is
// interpolated: the import does not fail as if it were unset.
func TestARequiredVariableThatIsSetIsInterpolated(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: shop/web:{version}
    command: ["/web", "--region", "${REGION:?set REGION}"]
    ports: ["${PORT:?set PORT}:8080"]
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"REGION=eu-west-1", "PORT=8080"}})
	if err != nil {
		t.Fatal(err)
	}
	if web := im.Services[0]; !slices.Equal(web.Command, []string{"/web", "--region", "eu-west-1"}) || web.Port != 8080 {
		t.Errorf("web %+v; want the required variables interpolated", web)
	}
	if _, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"PORT=8080"}}); err == nil || !strings.Contains(err.Error(), "set REGION") {
		t.Errorf("REGION unset: err %v; want Compose's own message", err)
	}
}

// A secret interpolated into a field the loader parses (a port) fails the load; the error says
// the variable is a secret and why, not only that ${PORT} is not a port.
func TestASecretInAPortIsRefusedSayingItIsASecret(t *testing.T) {
	dir := t.TempDir()
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: shop/web:{version}
    environment:
      PORT: ${PORT}
    ports: ["${PORT}:${PORT}"]
`)
	_, err := compose.Load(context.Background(), path, compose.Options{Env: []string{"PORT=8080"}})
	if err == nil || !strings.Contains(err.Error(), "PORT is a secret") || strings.Contains(err.Error(), "zero502secret") {
		t.Fatalf("a secret as a port: %v; want it refused, saying PORT is a secret, no token shown", err)
	}
}

// yamlLines are data's lines as YAML reads them: a line ends at \n, \r, U+0085, U+2028 or U+2029.
func yamlLines(data []byte) []string {
	return regexp.MustCompile("\r\n|[\n\r\u0085\u2028\u2029]").Split(string(data), -1)
}

// A note quotes values of the Compose file (a port's name or protocol, deploy.mode, an x- key):
// whatever line break YAML knows is in one (\r, U+0085, U+2028, U+2029), the note stays one
// comment line of the written config, as init prints it, and nothing of the value becomes config
// (a pre_deploy hook would run on the deployer's machine).
func TestANoteStaysOneCommentLineWhateverLineBreakTheFileHolds(t *testing.T) {
	for _, brk := range []string{`\r`, `\u0085`, `\u2028`, `\u2029`} {
		t.Run(brk, func(t *testing.T) {
			inject := `http` + brk + `hooks: {pre_deploy: {command: [sh, -c, 'id > /tmp/zero502-injected']}}` + brk + `#`
			path := write(t, t.TempDir(), "compose.yaml", `
services:
  web:
    image: web:{version}
    ports:
      - target: 8080
        published: "8080"
        name: "`+inject+`"
      - {target: 5353, published: "5353", protocol: "`+inject+`"}
    deploy: {mode: "`+inject+`"}
    "x-`+inject+`": 1
`)
			im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
			if err != nil {
				t.Fatal(err)
			}
			data, err := compose.Write(im, "compose.yaml")
			if err != nil {
				t.Fatal(err)
			}
			lines := yamlLines(data)
			at := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "# What zero502 does not honour") })
			if at < 0 || at+len(im.Notes) >= len(lines) {
				t.Fatalf("no notes in the written config:\n%q", data)
			}
			for i, n := range im.Notes {
				if got, want := lines[at+1+i], "#   "+n.String(); got != want {
					t.Errorf("comment line %d is %q; want note %q on one line:\n%q", at+1+i, got, want, data)
				}
			}
			if next := lines[at+1+len(im.Notes)]; strings.HasPrefix(next, "#   ") {
				t.Errorf("a comment line %q follows the notes", next)
			}
			cfg, err := config.LoadBytes(data, "the imported config")
			if err != nil {
				t.Fatalf("the written config does not load: %v\n%q", err, data)
			}
			if len(cfg.Hooks.PreDeploy.Command) > 0 || len(cfg.Services) != 1 {
				t.Errorf("the written config has hooks.pre_deploy %q and services %+v; want web only, no hook:\n%q", cfg.Hooks.PreDeploy.Command, cfg.Services, data)
			}
			requireNotes(t, notesText(im), `name "http`+brk+`hooks:`, `this "http`+brk+`hooks:`, `services.web.deploy.mode: "http`+brk+`hooks:`)
		})
	}
}

// A typo in the .env beside the Compose file or in an env_file (a quote not closed, a character
// no name holds, a $ that starts no variable) is an error naming the file and the line, never the
// value compose-go's parser quotes: a secret's, as likely as not. So is it through services_from.
func TestAnEnvFileTypoNamesTheFileAndLineNeverTheValue(t *testing.T) {
	const value = "Hunter2-Prod-Secret"
	for _, tc := range []struct{ name, file, text, want string }{
		{"a quote not closed in .env", ".env", "A=1\nDB_PASSWORD=\"" + value + "\nB=2\n", "line 2: a quoted value is not closed"},
		{"a quote not closed in an env_file", "web.env", "A=1\n\nDB_PASSWORD='" + value + "\n", "line 3: a quoted value is not closed"},
		{"a character no name holds", "web.env", "A=1\nDB@PASSWORD=" + value + "\n", `line 2: unexpected character "@" in a variable's name`},
		{"a $ that starts no variable", "web.env", "DB_PASSWORD=" + value + "${\n", "line 1: a value holds a $ that starts no ${NAME}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			envFile := write(t, dir, tc.file, tc.text)
			write(t, dir, "compose.yaml", "services:\n  web:\n    image: shop/web:{version}\n    environment: [DB_PASSWORD]\n    env_file: [{path: web.env, required: false}]\n")
			_, err := compose.Load(context.Background(), filepath.Join(dir, "compose.yaml"), compose.Options{Env: []string{}})
			if err == nil || !strings.Contains(err.Error(), "failed to read "+envFile+": "+tc.want) || strings.Contains(err.Error(), value) {
				t.Errorf("Load = %v; want an error with %q, without the value", err, envFile+": "+tc.want)
			}
			for e := err; e != nil; e = errors.Unwrap(e) {
				if strings.Contains(e.Error(), value) {
					t.Errorf("an error it wraps holds the value: %v", e)
				}
			}
			_, err = config.Load(write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n"))
			if err == nil || !strings.Contains(err.Error(), envFile+": "+tc.want) || strings.Contains(err.Error(), value) {
				t.Errorf("services_from: config.Load = %v; want an error with %q, without the value", err, envFile+": "+tc.want)
			}
		})
	}
}

// A name an env_file lists without a value (or sets to its own variable: NAME=${NAME},
// NAME=${NAME:?…}) is taken from the shell by Compose, as "- NAME" under environment: is: a
// secret, its value in no env and no written config. A default of the file's (${NAME:-…}) is a
// value, and environment: still wins over the env_file. An env_file whose path is interpolated
// (the import reads a secret's name before interpolation) is refused naming it.
func TestANameAnEnvFileListsWithoutAValueIsASecret(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "web.env", "API_KEY\nexport SIGNING_KEY\nTOKEN=${TOKEN}\nREGION=\"${REGION:?set REGION}\"\nLEVEL=${LEVEL:-info}\nMODE=batch\nPLAIN\n")
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: shop/web:{version}
    env_file: web.env
    environment: {PLAIN: given}
`)
	env := []string{"API_KEY=sk-live-7f3a", "SIGNING_KEY=sig-live-1", "TOKEN=tok-live-2", "REGION=eu-west-1", "LEVEL=debug", "PLAIN=from-the-shell"}
	im, err := compose.Load(context.Background(), path, compose.Options{Env: env})
	if err != nil {
		t.Fatal(err)
	}
	web := im.Services[0]
	if want := []string{"API_KEY", "REGION", "SIGNING_KEY", "TOKEN"}; !slices.Equal(web.Secrets, want) {
		t.Errorf("secrets %v; want %v", web.Secrets, want)
	}
	if want := map[string]string{"LEVEL": "debug", "MODE": "batch", "PLAIN": "given"}; !maps.Equal(web.Env, want) {
		t.Errorf("env %v; want %v", web.Env, want)
	}
	data, err := compose.Write(im, path)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"sk-live-7f3a", "sig-live-1", "tok-live-2", "eu-west-1", "from-the-shell", "zero502secret"} {
		if strings.Contains(string(data), v) {
			t.Errorf("the written config holds %q:\n%s", v, data)
		}
	}

	write(t, dir, "compose.yaml", "services:\n  web:\n    image: shop/web:{version}\n    env_file: ${ENV_DIR:-.}/web.env\n")
	_, err = compose.Load(context.Background(), path, compose.Options{Env: env})
	if err == nil || !strings.Contains(err.Error(), "services.web.env_file: API_KEY: listed without a value") || strings.Contains(err.Error(), "sk-live-7f3a") {
		t.Errorf("an interpolated env_file path: %v; want API_KEY refused, without its value", err)
	}
}

// Compose passes "{host}" as written (a Caddy placeholder, a template); zero502 fills in its own
// placeholders in an image, a command word and an env value at each deploy: each such field is a
// note naming the service, the field and the placeholder. {version} in the image is the tag
// deployed, as the import asks, and braces zero502 does not fill ({uri}) are no note.
func TestZero502PlaceholdersInAnImportedFieldAreNoted(t *testing.T) {
	dir := t.TempDir()
	write(t, dir, "web.env", "ORIGIN=http://{address}:{port}\nPLAIN={uri}\n")
	path := write(t, dir, "compose.yaml", `
services:
  web:
    image: caddy:{version}
    entrypoint: [caddy]
    command: [respond, --listen, ":8080", "served by {host} on {port}, {version} of {self}"]
    environment:
      REDIRECT: "https://{host}{uri}"
      LITERAL: "{uri} {HOST} {ho st}"
    env_file: web.env
    ports: ["8080:8080"]
  side:
    image: "side:{host}-{version}"
`)
	im, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}})
	if err != nil {
		t.Fatal(err)
	}
	all := notesText(im)
	const fills = ": zero502 fills in its placeholders"
	requireNotes(t, all,
		"services.web.environment.REDIRECT: {host}"+fills,
		"services.web.command: {host}, {port}, {version}, {self}"+fills,
		"services.web.env_file (ORIGIN): {address}, {port}"+fills,
		"services.side.image: {host}"+fills,
	)
	for _, none := range []string{"services.web.image", "services.web.entrypoint: {", "LITERAL", "PLAIN", "side.image: {host}, {version}"} {
		if strings.Contains(all, none) {
			t.Errorf("a note names %s, which holds no placeholder zero502 fills (or only the image's {version}):\n%s", none, all)
		}
	}
}

// COMPOSE_PROFILES (the environment, or the .env beside the file) enables profiles as docker
// compose does, and profiles given (init's --profile) win over it. A service in a profile not
// enabled is a note saying how to enable it for the caller: init has --profile, services_from
// COMPOSE_PROFILES only; so does the error when no service is enabled.
func TestComposeProfilesEnablesProfilesAsDockerComposeDoes(t *testing.T) {
	dir := t.TempDir()
	const file = "services:\n  web:\n    image: shop/web:{version}\n  jobs:\n    image: shop/jobs:{version}\n    profiles: [prod]\n  debug:\n    image: busybox:{version}\n    profiles: [debug, dev]\n"
	path := write(t, dir, "compose.yaml", file)
	names := func(im *compose.Import) []string {
		var out []string
		for _, s := range im.Services {
			out = append(out, s.Name)
		}
		return out
	}
	for _, tc := range []struct {
		name, dotEnv string
		o            compose.Options
		want         []string
		notes        []string
	}{
		{"none", "", compose.Options{Env: []string{}}, []string{"web"}, []string{
			"services.jobs.profiles: prod, not enabled (enabled: none): the service is not imported; to import it, enable its profile with COMPOSE_PROFILES=prod (in the environment, or the .env beside the Compose file)",
			"services.debug.profiles: debug,dev, not enabled"}},
		{"in .env", "COMPOSE_PROFILES=prod\n", compose.Options{Env: []string{}}, []string{"jobs", "web"}, []string{"services.debug.profiles: debug,dev, not enabled (enabled: prod)"}},
		{"in the environment, over .env", "COMPOSE_PROFILES=prod\n", compose.Options{Env: []string{"COMPOSE_PROFILES=debug, prod"}}, []string{"debug", "jobs", "web"}, nil},
		{"given, over COMPOSE_PROFILES", "COMPOSE_PROFILES=prod\n", compose.Options{Env: []string{}, Profiles: []string{"debug"}, ProfileFlag: "--profile"}, []string{"debug", "web"}, []string{
			"services.jobs.profiles: prod, not enabled (enabled: debug): the service is not imported; to import it, enable its profile with --profile prod, or COMPOSE_PROFILES=prod (in the environment, or the .env beside the Compose file)"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_ = os.Remove(filepath.Join(dir, ".env"))
			if tc.dotEnv != "" {
				write(t, dir, ".env", tc.dotEnv)
			}
			im, err := compose.Load(context.Background(), path, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(im); !slices.Equal(got, tc.want) {
				t.Errorf("services %v; want %v", got, tc.want)
			}
			all := notesText(im)
			requireNotes(t, all, tc.notes...)
			if len(tc.notes) == 0 && strings.Contains(all, "profiles") {
				t.Errorf("a note names a profile, with every service enabled:\n%s", all)
			}
		})
	}

	write(t, dir, "compose.yaml", "services:\n  jobs:\n    image: shop/jobs:{version}\n    profiles: [prod]\n")
	_ = os.Remove(filepath.Join(dir, ".env"))
	_, err := compose.Load(context.Background(), path, compose.Options{Env: []string{}, ProfileFlag: "--profile"})
	if err == nil || !strings.Contains(err.Error(), "no service is enabled (enabled profiles: none): enable a profile with --profile prod, or COMPOSE_PROFILES=prod") {
		t.Errorf("init, no service enabled: %v; want --profile and COMPOSE_PROFILES named", err)
	}
	t.Setenv("COMPOSE_PROFILES", "")
	_, err = config.Load(write(t, dir, "zero502.yaml", "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\nservices_from: compose.yaml\n"))
	if err == nil || !strings.Contains(err.Error(), "enable a profile with COMPOSE_PROFILES=prod (in the environment, or the .env beside the Compose file)") || strings.Contains(err.Error(), "--profile") {
		t.Errorf("services_from, no service enabled: %v; want COMPOSE_PROFILES named, and no --profile (services_from has none)", err)
	}
	t.Setenv("COMPOSE_PROFILES", "prod")
	if cfg, err := config.Load(filepath.Join(dir, "zero502.yaml")); err != nil || len(cfg.Services) != 1 || cfg.Services[0].Name != "jobs" {
		t.Errorf("services_from with COMPOSE_PROFILES=prod: %v; want jobs", err)
	}
}

// An environment a process cannot be given (a NUL byte in a value) or a name that is not a
// variable's name (with '=' it would set another variable in the child, PATH here) is refused
// when the config that imports the compose file loads, naming services[0].env: never at Start on
// a host, after a stop-first deploy stopped the old instance.
func TestAComposeEnvNoProcessCanBeGivenIsRefusedAtLoad(t *testing.T) {
	for _, tc := range []struct{ name, env, want string }{
		{"NUL in a value", "      A: \"x\\0y\"\n", `services[0].env.A: "x\x00y"`},
		{"= in a name", "      \"PATH=/opt/evil/bin:/usr/bin\": \"\"\n", `services[0].env: "PATH=/opt/evil/bin:/usr/bin"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, dir, "compose.yaml", "services:\n  web:\n    image: shop/web:{version}\n    environment:\n"+tc.env)
			base := "rollout: {runtime: docker}\nhosts: [{name: h1, address: 127.0.0.1}]\n"
			cfg, err := config.Load(write(t, dir, "zero502.yaml", base+"services_from: compose.yaml\n"))
			if err == nil {
				t.Fatalf("config with services_from loaded; env %q accepted; want an error naming services[0].env", cfg.Services[0].Env)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %v does not name %s", err, tc.want)
			}
		})
	}
}
