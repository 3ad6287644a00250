package config

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/go-viper/mapstructure/v2"
	"github.com/spf13/viper"
	"github.com/zero502/zero502/infra/trust"
	"go.yaml.in/yaml/v3"
)

//go:embed defaults.yaml
var defaultsYAML []byte

// DefaultPath is the config file read when no --config is given.
const DefaultPath = "./zero502.yaml"

// EnvPrefix prefixes environment overrides: ZERO502_DRAIN_WINDOW=20s sets drain.window.
const EnvPrefix = "ZERO502"

// errNoDefaultConfig is Load's error when no --config was given and ./zero502.yaml is missing.
var errNoDefaultConfig = errors.New("no " + DefaultPath + "; pass --config FILE (examples/local.yaml runs on this machine)")

// Defaults returns the embedded defaults (the source's numbers, no services, no hosts), whatever
// the environment says: the shipped numbers, which flags take as their defaults.
func Defaults() *Config {
	c, err := loadBytes(nil, "defaults", false)
	if err != nil {
		panic(fmt.Sprintf("embedded defaults do not load: %v", err))
	}
	return c
}

// Load reads the config file at path over the embedded defaults, applies ZERO502_* environment
// overrides (refusing a ZERO502_* variable that names no config key: see envUnknown), decodes
// strictly and validates. A missing file is an error, DefaultPath too (errNoDefaultConfig): a
// command never goes on with an empty fleet because the file was not where it looked.
func Load(path string) (*Config, error) {
	if path == "" {
		path = DefaultPath
	}
	data, err := readFile(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) && path == DefaultPath {
			return nil, errNoDefaultConfig
		}
		if errors.Is(err, trust.ErrRefused) {
			return nil, fmt.Errorf("config %s: %w: root reads only a config that is root's alone (it names the hooks a deploy runs, "+
				"and the state dirs and runtime the watchdog heals from): make it and every directory above it root's, writable by "+
				"no one else", path, err)
		}
		return nil, fmt.Errorf("config %s: %w (pass --config FILE; examples/ has two)", path, err)
	}
	c, err := LoadBytes(data, path)
	if err != nil {
		return nil, err
	}
	if err := secretsKeptPrivate(path, data); err != nil {
		return nil, err
	}
	return c, nil
}

// readFile reads the config file at path; as root only through trust.Open, so that a file
// another user could change (or any directory above it) never chooses what root runs.
func readFile(path string) ([]byte, error) {
	if os.Geteuid() != 0 {
		return os.ReadFile(path)
	}
	f, err := trust.Open(path, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// adminTokenEnv is the variable that sets balancer.admin_token over the file.
const adminTokenEnv = EnvPrefix + "_BALANCER_ADMIN_TOKEN"

// secretsKeptPrivate refuses the config file path, holding data, when it sets
// balancer.admin_token (the key to the LB's admin API) while others may read it, or change it,
// as trust.CheckPrivate says of a secrets file. A token from the environment leaves the file free
// to be world-readable (as the LB's unit needs it under DynamicUser).
func secretsKeptPrivate(path string, data []byte) error {
	// Read as loadBytes reads the file (viper: keys in any case, dotted keys), so that a token
	// written Balancer: Admin_Token: or balancer.admin_token: is found too.
	fv := viper.New()
	fv.SetConfigType("yaml")
	if fv.ReadConfig(bytes.NewReader(data)) != nil || fv.GetString("balancer.admin_token") == "" {
		return nil // not YAML Load reads (it said so), or no token in the file
	}
	if err := trust.CheckPrivate(path, os.Getuid()); err != nil {
		return fmt.Errorf("config %s: %w", path, &FieldError{Key: "balancer.admin_token", Value: notShown, Rule: fmt.Sprintf(
			"a secret, so the file holding it must be readable by its owner alone: %v; or leave it out of the file and set $%s "+
				"(the LB itself also takes $ZERO502_LB_ADMIN_TOKEN or --admin-token-file)", err, adminTokenEnv)})
	}
	return nil
}

// LoadBytes is Load on YAML already in memory; name is used in error messages.
func LoadBytes(data []byte, name string) (*Config, error) {
	return loadBytes(data, name, true)
}

// LoadSent is LoadBytes for a config another zero502 sent whole (the deployer's config stream to
// a host's step, look or lock): this machine's ZERO502_* environment does not change it, so a
// host acts on the config the deployer checked, not on one a variable in its deploy user's
// profile altered (and a stray ZERO502_* there does not fail the load).
func LoadSent(data []byte, name string) (*Config, error) {
	return loadBytes(data, name, false)
}

// loadBytes is LoadBytes, with the ZERO502_* environment overrides or without them.
func loadBytes(data []byte, name string, withEnv bool) (*Config, error) {
	v := viper.New()
	v.SetConfigType("yaml")
	if err := v.ReadConfig(bytes.NewReader(defaultsYAML)); err != nil {
		return nil, fmt.Errorf("embedded defaults: %w", err)
	}
	lockSetIn := lockPathSetBy(nil)
	if len(data) > 0 {
		fv := viper.New()
		fv.SetConfigType("yaml")
		if err := fv.ReadConfig(bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("config %s: not valid YAML: %w", name, err)
		}
		if err := keysOnce(data); err != nil {
			return nil, fmt.Errorf("config %s: %w", name, err)
		}
		settings := withoutExtensions(fv.AllSettings())
		if err := unknownKeys(settings, "", reflect.TypeOf(Config{})); err != nil {
			return nil, fmt.Errorf("config %s: %w", name, err)
		}
		if err := v.MergeConfigMap(settings); err != nil {
			return nil, fmt.Errorf("config %s: %w", name, err)
		}
		lockSetIn = lockPathSetBy(fv)
	}
	if withEnv {
		if err := envUnknown(os.Environ()); err != nil {
			return nil, fmt.Errorf("config %s: %w", name, err)
		}
		v.SetEnvPrefix(EnvPrefix)
		v.SetEnvKeyReplacer(strings.NewReplacer(".", "_"))
		v.AutomaticEnv()
	}

	if err := envValuesAreText(data); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	share, err := fleetShare(v, "rollout.batch", 1)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	unavailableShare, err := fleetShare(v, "rollout.max_unavailable", 0)
	if err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	var c Config
	err = v.UnmarshalExact(&c, func(dc *mapstructure.DecoderConfig) {
		dc.DecodeHook = mapstructure.ComposeDecodeHookFunc(durationHook, intHook, textHook)
		dc.WeaklyTypedInput = false
		dc.ErrorUnused = true
	})
	if err != nil {
		problems, fromEnv := decodeProblems(err, os.Environ())
		if fromEnv {
			return nil, problems
		}
		return nil, fmt.Errorf("config %s: %w", name, problems)
	}
	c.Rollout.BatchShare, c.Rollout.MaxUnavailableShare = share, unavailableShare
	if err := keepEnvCase(&c, data); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if err := c.readServicesFrom(name); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if f := c.Secrets.File; f != "" && !filepath.IsAbs(f) {
		c.Secrets.File = filepath.Join(filepath.Dir(name), f) // as services_from: beside the config
	}
	c.applyListDefaults()
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	if err := c.checkLockPath(lockSetIn); err != nil {
		return nil, fmt.Errorf("config %s: %w", name, err)
	}
	return &c, nil
}

// envUnknown refuses every ZERO502_* variable of environ that sets no config key and is not one
// zero502 reads elsewhere (EnvNotConfig), naming the closest known name: a misspelt override
// (ZERO502_DRIAN_WINDOW) must never be silently ignored.
func envUnknown(environ []string) error {
	known := envKeys("", reflect.TypeOf(Config{}))
	known = append(known, EnvNotConfig()...)
	var errs []error
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if !strings.HasPrefix(name, EnvPrefix+"_") || slices.Contains(known, name) {
			continue
		}
		hint := ""
		if s := closest(name, known); s != "" {
			hint = fmt.Sprintf(" (did you mean %s?)", s)
		}
		errs = append(errs, fmt.Errorf("environment variable %s sets no config key%s: a ZERO502_* variable is %s_ + a key path "+
			"in upper case with _ for . (ZERO502_DRAIN_WINDOW sets drain.window; docs/config.md); unset it or fix its name",
			name, hint, EnvPrefix))
	}
	return errors.Join(errs...)
}

// envKeys lists the environment variable of every scalar key under type t (sections recursed,
// lists of sections skipped: services and hosts are set in the file only).
func envKeys(prefix string, t reflect.Type) []string {
	var out []string
	for _, f := range keyFields(t) {
		name := prefix + "_" + strings.ToUpper(f.Tag.Get("mapstructure"))
		switch {
		case f.Type.Kind() == reflect.Struct && f.Type != durationType:
			out = append(out, envKeys(name, f.Type)...)
		case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
		default:
			out = append(out, EnvPrefix+name)
		}
	}
	return out
}

var durationType = reflect.TypeOf(time.Duration(0))

// keyFields are the fields of struct type t that are config keys, in order, with the fields of
// an embedded struct tagged mapstructure:",squash" (Balancer's BalancerNumbers) in its place:
// squashed, they sit at t's own level of the YAML.
func keyFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for i := range t.NumField() {
		f := t.Field(i)
		switch tag := f.Tag.Get("mapstructure"); {
		case f.Anonymous && tag == ",squash":
			out = append(out, keyFields(f.Type)...)
		case tag != "-": // SecretValues, Rollout.BatchShare…: fields, never keys
			out = append(out, f)
		}
	}
	return out
}

// durationHook turns "15s" into a time.Duration and refuses bare numbers, whose unit would be a
// guess. Environment overrides arrive as strings and go through the same path.
func durationHook(from, to reflect.Type, data any) (any, error) {
	if to != durationType {
		return data, nil
	}
	switch d := data.(type) {
	case string:
		v, err := time.ParseDuration(d)
		if err != nil && durationFormRE.MatchString(strings.TrimSpace(d)) {
			return nil, fmt.Errorf("%q is out of range: a duration is at most %s, either way", d, time.Duration(math.MaxInt64))
		}
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration; write it with a unit, e.g. 5s or 250ms", d)
		}
		return v, nil
	case time.Duration:
		return d, nil
	default:
		return nil, fmt.Errorf("%v is not a duration; write it with a unit, e.g. 5s or 250ms", data)
	}
}

// durationFormRE is what time.ParseDuration reads, numbers each with a unit: a string of this
// form that it refuses overflows.
var durationFormRE = regexp.MustCompile(`^[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+$`)

// fleetShare turns key (rollout.batch, rollout.max_unavailable) given as a share of the fleet
// ("20%", as Nomad, ECS, CodeDeploy and Kubernetes take it) into the number of hosts it is:
// rounded down, at least least. It returns the share in percent (0 when key is a number), which
// I15 judges for the batch.
func fleetShare(v *viper.Viper, key string, least int) (int, error) {
	raw, ok := v.Get(key).(string)
	if !ok || !strings.HasSuffix(strings.TrimSpace(raw), "%") {
		return 0, nil
	}
	p, err := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(raw), "%"))
	if err != nil || p < 1 || p > 100 {
		return 0, &FieldError{Key: key, Value: fmt.Sprintf("%q", raw),
			Rule: "must be a whole number of hosts (e.g. 2) or a share of the fleet from 1% to 100% (e.g. 20%)"}
	}
	hosts, _ := v.Get("hosts").([]any)
	v.Set(key, max(least, p*len(hosts)/100))
	return p, nil
}

// intHook accepts integers from environment overrides ("4") but not from other types, and
// refuses a number of the file that is no int (4.9, 1e20, 2^64-1): the decoder would cut the
// fraction off or wrap it around, without a word.
func intHook(from, to reflect.Type, data any) (any, error) {
	if to.Kind() != reflect.Int {
		return data, nil
	}
	switch from.Kind() {
	case reflect.Float32, reflect.Float64:
		f := reflect.ValueOf(data).Float()
		if f != math.Trunc(f) || f < math.MinInt64 || f >= math.MaxInt64 {
			return nil, fmt.Errorf("%v is not a whole number", data)
		}
		return int(f), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		if reflect.ValueOf(data).Uint() > math.MaxInt64 {
			return nil, fmt.Errorf("%v is not a whole number zero502 can hold", data)
		}
		return data, nil
	case reflect.String:
	default:
		return data, nil
	}
	var n int
	if _, err := fmt.Sscanf(data.(string), "%d", &n); err != nil || fmt.Sprint(n) != strings.TrimSpace(data.(string)) {
		return nil, fmt.Errorf("%q is not a whole number", data)
	}
	return n, nil
}

// textHook accepts true or false and numbers from environment overrides ("false", "0.1"),
// which are always text, as intHook accepts whole numbers.
func textHook(from, to reflect.Type, data any) (any, error) {
	if from.Kind() != reflect.String {
		return data, nil
	}
	text := strings.TrimSpace(data.(string))
	switch to.Kind() {
	case reflect.Bool:
		switch text {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", data)
	case reflect.Float64:
		f, err := strconv.ParseFloat(text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", data)
		}
		return f, nil
	}
	return data, nil
}

// ExtensionPrefix starts a top-level key that is an extension, as in Kamal's deploy.yml and
// Compose files: zero502 ignores it, so it can hold YAML anchors that the sections it knows
// alias or merge (<<: *defaults). Only at the top: a key inside a section is held to the
// strict rule, so a typo there is never taken for an extension.
const ExtensionPrefix = "x-"

// withoutExtensions is the file's top-level settings without its extensions (ExtensionPrefix);
// the anchors they hold are resolved already where they are used.
func withoutExtensions(m map[string]any) map[string]any {
	for k := range m {
		if strings.HasPrefix(k, ExtensionPrefix) {
			delete(m, k)
		}
	}
	return m
}

// unknownKeys walks what the file set and refuses any key Config does not have, naming the
// closest known key: a typo like drian: must never be silently ignored.
func unknownKeys(m map[string]any, prefix string, t reflect.Type) error {
	known := map[string]reflect.Type{}
	for _, f := range keyFields(t) {
		known[f.Tag.Get("mapstructure")] = f.Type
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		ft, ok := known[k]
		if !ok {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			hint := ""
			if s := closest(k, names); s != "" {
				hint = fmt.Sprintf(" (did you mean %q?)", prefix+s)
			}
			return fmt.Errorf("unknown key %q%s: every key must be one zero502 knows (docs/config.md)", prefix+k, hint)
		}
		switch {
		case ft.Kind() == reflect.Struct && ft != durationType:
			sub, ok := m[k].(map[string]any)
			if !ok {
				return fmt.Errorf("key %q: %v is not a section; it takes nested keys", prefix+k, m[k])
			}
			if err := unknownKeys(sub, prefix+k+".", ft); err != nil {
				return err
			}
		case ft.Kind() == reflect.Slice && ft.Elem().Kind() == reflect.Struct:
			items, ok := m[k].([]any)
			if !ok {
				return fmt.Errorf("key %q: %v is not a list", prefix+k, m[k])
			}
			for i, it := range items {
				sub, ok := it.(map[string]any)
				if !ok {
					return fmt.Errorf("key %s[%d]: %v is not a section", prefix+k, i, it)
				}
				if err := unknownKeys(sub, fmt.Sprintf("%s%s[%d].", prefix, k, i), ft.Elem()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// keysOnce refuses a key the file sets twice in two forms that are read as one key: in another
// case (window: and Window:, which viper and the decoder fold together) or as a dotted key
// beside its section (drain.window: beside drain: window:). YAML itself refuses a key written
// twice alike; of these, one would silently win. services[].env names keep their case (two
// names), and are not compared.
func keysOnce(data []byte) error {
	var raw map[string]any
	if yaml.Unmarshal(data, &raw) != nil {
		return nil // the reader reports it
	}
	seen := map[string]string{} // key path, folded → how it was written
	var walk func(m map[string]any, prefix, written string) error
	walk = func(m map[string]any, prefix, written string) error {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			path, as := prefix+strings.ToLower(k), fmt.Sprintf("%q", written+k)
			if strings.Contains(k, ".") {
				as = "the dotted key " + as
			}
			if first, twice := seen[path]; twice {
				return fmt.Errorf("key %s is set twice, as %s and as %s: keys are read in any case, and a dotted key is the keys "+
					"of its sections; set it once", path, first, as)
			}
			seen[path] = as
			switch v := m[k].(type) {
			case map[string]any:
				if strings.HasSuffix(path, ".env") && strings.HasPrefix(path, "services[") {
					continue // a service's own variable names
				}
				if err := walk(v, path+".", written+k+"."); err != nil {
					return err
				}
			case []any:
				for i, it := range v {
					if item, ok := it.(map[string]any); ok {
						if err := walk(item, fmt.Sprintf("%s[%d].", path, i), fmt.Sprintf("%s%s[%d].", written, k, i)); err != nil {
							return err
						}
					}
				}
			}
		}
		return nil
	}
	return walk(raw, "", "")
}

// closest returns the candidate within edit distance 2 of s, if any.
func closest(s string, candidates []string) string {
	best, bestD := "", 3
	sort.Strings(candidates)
	for _, c := range candidates {
		if d := editDistance(s, c); d < bestD {
			best, bestD = c, d
		}
	}
	return best
}

func editDistance(a, b string) int {
	// Optimal string alignment distance: a transposition (drian/drain) counts as one edit.
	d := make([][]int, len(a)+1)
	for i := range d {
		d[i] = make([]int, len(b)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(a)][len(b)]
}

// applyListDefaults fills the defaults of list items, which viper's defaults cannot reach.
func (c *Config) applyListDefaults() {
	for i := range c.Services {
		if c.Services[i].StopSignal == "" {
			c.Services[i].StopSignal = "SIGTERM"
		}
		s := &c.Services[i]
		if s.Kind == "" {
			s.Kind = KindApp
		}
		if s.Health.Path == "" {
			s.Health.Path = s.HealthPath
		}
		if s.Health.Path == "" && s.Kind == KindLB {
			s.Health.Path = lbHealthPath
		}
		if s.Health.Path == "" {
			s.Health.Path = c.Balancer.HealthPath
		}
		if s.HealthPath == "" {
			s.HealthPath = s.Health.Path
		}
		if s.Health.ExpectStatus == 0 {
			s.Health.ExpectStatus = 200
		}
		for j := range s.Smoke {
			if s.Smoke[j].Method == "" {
				s.Smoke[j].Method = http.MethodGet
			}
			if s.Smoke[j].ExpectStatus == 0 {
				s.Smoke[j].ExpectStatus = http.StatusOK
			}
			if s.Smoke[j].Timeout == 0 {
				s.Smoke[j].Timeout = c.Balancer.Timeout
			}
		}
		if s.Health.Timeout == 0 {
			s.Health.Timeout = c.Balancer.Timeout
		}
		if s.Drain == "" {
			s.Drain = DrainHandshake
		}
		if s.Port == 0 && len(s.Ports) > 0 {
			s.Port = s.Ports[0]
		}
		if s.Verify.VersionPath != "" && s.Verify.ExpectBody == "" {
			s.Verify.ExpectBody = "{version}"
		}
	}
	for i := range c.Hosts {
		if c.Hosts[i].Address == "" && c.Hosts[i].SSH == "" {
			c.Hosts[i].Address = "127.0.0.1"
		}
	}
}

// keepEnvCase restores the case of services[].env names, which viper folds to lower case with
// every other key: a service must get PATH_PREFIX, not path_prefix.
func keepEnvCase(c *Config, data []byte) error {
	if len(data) == 0 {
		return nil
	}
	var raw struct {
		Services []struct {
			Env map[string]string `yaml:"env"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(data, &raw); err != nil {
		return fmt.Errorf("services[].env: %w (names and values must be strings)", err)
	}
	for i := range c.Services {
		if i < len(raw.Services) && raw.Services[i].Env != nil {
			c.Services[i].Env = raw.Services[i].Env
		}
	}
	return nil
}
