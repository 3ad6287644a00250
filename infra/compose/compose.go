// Package compose reads a Compose file, with the Compose specification's own loader
// (compose-spec/compose-go: profiles, ${VAR} interpolation, env_file and the merge rules as
// `docker compose` applies them), and turns its services into zero502's: image, command
// (entrypoint first), environment, the published port, an HTTP health check, the stop signal
// and grace, and deploy.update_config's order and parallelism. What zero502 cannot honour is
// never dropped silently: each such key is a Note naming the service, the key and what to do.
// `zero502 init --from-compose` writes the result as a config a person reads and edits.
package compose

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/compose-spec/compose-go/v2/cli"
	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"

	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/printable"
	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// Note is one thing of the Compose file zero502 does not do as Compose would.
type Note struct {
	Service string // "" for the file as a whole
	Key     string // the Compose key, e.g. volumes, deploy.update_config.order
	What    string // what zero502 does instead, and what to do
}

// String is the note as one line, as init prints it, Write comments it and a deploy reports it:
// each rune that is not graphic (a control character, a line or paragraph separator, a format
// character: what a Compose value may hold) is written as its Go escape (printable.Line), so
// that nothing of the file ends the line (a YAML comment ends at \r, U+0085, U+2028 and U+2029
// too) or moves the terminal's cursor.
func (n Note) String() string {
	if n.Service == "" {
		return printable.Line(n.Key + ": " + n.What)
	}
	return printable.Line("services." + n.Service + "." + n.Key + ": " + n.What)
}

// shown is a value of the file as a note quotes it: as written when it is plain (no space, quote,
// backslash or rune that is not graphic), otherwise quoted by strconv.QuoteToGraphic, so that
// where it ends is plain and nothing in it ends the note's line.
func shown(v any) string {
	s := fmt.Sprint(v)
	if s == "" || strings.ContainsFunc(s, func(r rune) bool {
		return unicode.IsSpace(r) || r == '"' || r == '\\' || r == '`' || !unicode.IsGraphic(r)
	}) {
		return strconv.QuoteToGraphic(s)
	}
	return s
}

// Import is what a Compose file becomes.
type Import struct {
	// Services are zero502's services, in the Compose file's name order.
	Services []config.Service
	// Strategy is rollout.strategy from deploy.update_config.order ("" when no service says).
	Strategy string
	// Batch is rollout.batch from deploy.update_config.parallelism (0 when no service says).
	Batch int
	// StopGrace is the longest stop_grace_period (0 when none is set): drain.stop_grace is
	// one number for every service.
	StopGrace time.Duration
	// Notes are what zero502 does not honour, key by key.
	Notes []Note
}

// Options choose what of the file is read.
type Options struct {
	// Profiles are the Compose profiles to enable (as --profile); none: those COMPOSE_PROFILES
	// names (comma-separated, in Env or the .env beside the file), as docker compose does.
	// Services in no profile are always read; one in a profile not enabled is a note.
	Profiles []string
	// ProfileFlag is how the caller enables a profile besides COMPOSE_PROFILES ("--profile" for
	// init --from-compose), named where a note or an error says how; "": COMPOSE_PROFILES only
	// (services_from).
	ProfileFlag string
	// Env is the environment ${VAR} interpolation reads (as KEY=VALUE), before the .env file
	// beside the Compose file; nil: this process's environment.
	Env []string
	// Check, when set, judges each file the services are read from besides the Compose file
	// itself: the .env beside it (interpolation, COMPOSE_PROFILES), each env_file of a service
	// read, and the files include and extends name (referenced). A file it refuses fails the
	// load; one that is not there is not judged.
	Check func(path string) error
}

// Load reads the Compose file path.
//
// A secret's value (a variable a service lists without a value: one of services[].secrets) never
// comes out of the import: the file is read first without interpolation, for the secrets' names,
// then with each secret's ${NAME} standing for a token of its own (seal) instead of its value. A
// note or an error shows the token as ${NAME}; a field the import writes that holds one (the
// command, the image, an env value, …) is refused, naming the field and the secret.
func Load(ctx context.Context, path string, o Options) (*Import, error) {
	base := []cli.ProjectOptionsFn{cli.WithWorkingDirectory(filepath.Dir(path)), cli.WithName(projectName(path))}
	names, err := secretNames(ctx, path, base)
	if err != nil {
		return nil, fmt.Errorf("compose file %s: %w", path, err)
	}
	secrets := newSeal(names)
	fns := slices.Clone(base)
	if o.Env != nil {
		fns = append(fns, cli.WithEnv(o.Env))
	} else {
		fns = append(fns, cli.WithOsEnv)
	}
	fns = append(fns, secrets.option)
	fns = append(fns, cli.WithEnvFiles(), cli.WithDotEnv) // the .env beside the file, under the environment
	// the profiles given, or COMPOSE_PROFILES of the environment and .env (read above)
	fns = append(fns, cli.WithDefaultProfiles(o.Profiles...))
	opts, err := cli.NewProjectOptions([]string{path}, fns...)
	if err != nil {
		return nil, secrets.wrap(path, err)
	}
	project, err := opts.LoadProject(ctx)
	if err != nil {
		return nil, secrets.wrap(path, err)
	}
	// the keys as the file set them: the loader's normalisation adds some (a default network),
	// and its model, unlike its project, would interpolate them without the environment (a
	// required ${VAR:?…} would fail)
	raw, err := cli.NewProjectOptions([]string{path}, append(fns, cli.WithNormalization(false), cli.WithInterpolation(false))...)
	if err != nil {
		return nil, secrets.wrap(path, err)
	}
	model, err := raw.LoadModel(ctx)
	if err != nil {
		return nil, secrets.wrap(path, err)
	}
	set, _ := model["services"].(map[string]any)

	im := &Import{}
	for _, k := range []string{"volumes", "networks", "secrets", "configs"} {
		if v, ok := model[k].(map[string]any); ok && len(v) > 0 {
			im.Notes = append(im.Notes, Note{Key: k, What: topLevel[k]})
		}
	}
	serviceNames := project.ServiceNames()
	sort.Strings(serviceNames)
	scs := make([]types.ServiceConfig, 0, len(serviceNames))
	for _, name := range serviceNames {
		sc, err := project.GetService(name)
		if err != nil {
			return nil, secrets.wrap(path, err)
		}
		scs = append(scs, sc)
	}
	// rollout.strategy is one for the fleet, and start-first gives every service with a port
	// its two ports: it is decided (the first service, in name order, that sets an order)
	// before any service is read
	for _, sc := range scs {
		if s := updateOrder(sc); s != "" {
			im.Strategy = s
			break
		}
	}
	if o.Check != nil {
		files, err := referenced(ctx, path, base, map[string]bool{path: true})
		if err != nil {
			return nil, fmt.Errorf("compose file %s: %w", path, err)
		}
		files = append(files, filepath.Join(filepath.Dir(path), ".env"))
		for _, sc := range scs {
			for _, f := range sc.EnvFiles {
				if f.Path != os.DevNull { // the empty env_file: nothing anyone can write into
					files = append(files, f.Path)
				}
			}
		}
		for _, f := range files {
			if err := o.Check(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return nil, fmt.Errorf("compose file %s: %w", path, err)
			}
		}
	}
	var refused []error
	for _, sc := range scs {
		keys, _ := set[sc.Name].(map[string]any)
		refused = append(refused, im.service(sc, keys, secrets)...)
	}
	if len(refused) > 0 {
		return nil, fmt.Errorf("compose file %s: %w", path, errors.Join(refused...))
	}
	enabled := "none"
	if p := slices.DeleteFunc(slices.Clone(project.Profiles), func(p string) bool { return p == "" }); len(p) > 0 {
		enabled = shown(strings.Join(p, ","))
	}
	disabled := slices.Sorted(maps.Keys(project.DisabledServices))
	for _, name := range disabled {
		profiles := project.DisabledServices[name].Profiles
		im.Notes = append(im.Notes, Note{Service: name, Key: "profiles", What: fmt.Sprintf(
			"%s, not enabled (enabled: %s): the service is not imported; to import it, enable its profile %s",
			shown(strings.Join(profiles, ",")), enabled, o.enableProfile(profiles[0]))})
	}
	for i, n := range im.Notes {
		im.Notes[i] = Note{Service: secrets.open(n.Service), Key: secrets.open(n.Key), What: secrets.open(n.What)}
	}
	if len(im.Services) == 0 {
		profile := "NAME"
		if len(disabled) > 0 {
			profile = project.DisabledServices[disabled[0]].Profiles[0]
		}
		return nil, fmt.Errorf("compose file %s: no service is enabled (enabled profiles: %s): enable a profile %s, or give a service no profile",
			path, enabled, o.enableProfile(profile))
	}
	return im, nil
}

// enableProfile says how profile is enabled for o's caller: COMPOSE_PROFILES, which docker
// compose reads too, and the caller's flag (ProfileFlag), which wins over it.
func (o Options) enableProfile(profile string) string {
	env := fmt.Sprintf("with COMPOSE_PROFILES=%s (in the environment, or the .env beside the Compose file)", shown(profile))
	if o.ProfileFlag == "" {
		return env
	}
	return fmt.Sprintf("with %s %s, or %s", o.ProfileFlag, shown(profile), strings.TrimPrefix(env, "with "))
}

// secretNames are the variables a service of the file (in any profile) lists without a value,
// under environment: or in an env_file (fromEnvironment): the secrets. The file is read without
// interpolation (so nothing of the environment is in it) and without validation (a ${VAR} stands
// where a number goes).
func secretNames(ctx context.Context, path string, base []cli.ProjectOptionsFn) (map[string]bool, error) {
	opts, err := cli.NewProjectOptions([]string{path}, append(slices.Clone(base), cli.WithInterpolation(false),
		cli.WithNormalization(false), cli.WithConsistency(false), cli.WithLoadOptions(func(o *loader.Options) {
			o.SkipValidation = true
		}))...)
	if err != nil {
		return nil, err
	}
	model, err := opts.LoadModel(ctx)
	if err != nil {
		return nil, err
	}
	names := map[string]bool{}
	services, _ := model["services"].(map[string]any)
	for _, sc := range services {
		keys, _ := sc.(map[string]any)
		maps.Copy(names, valueless(keys["environment"]))
		for _, path := range envFilePaths(keys["env_file"]) {
			// a path the file interpolates is read after interpolation only: a name it takes
			// from the environment is refused there (service)
			if !strings.Contains(path, "$") {
				maps.Copy(names, fromEnvironment(path))
			}
		}
	}
	return names, nil
}

// referenced are the files the Compose loader reads for path besides path itself and the
// services' env_files: the Compose files its include and extends declarations name, the .env
// beside each included one, and what those name in turn (seen: the files already followed). They
// are read as secretNames reads the file (no interpolation), which has read path so already.
func referenced(ctx context.Context, path string, base []cli.ProjectOptionsFn, seen map[string]bool) ([]string, error) {
	var named, envs []string
	listen := func(event string, m map[string]any) {
		dir := filepath.Dir(path) // an extends file of path's own services is relative to it
		var paths []string
		switch event {
		case "include":
			if wd, ok := m["workingdir"].(string); ok && wd != "" {
				dir = wd
			}
			paths, _ = m["path"].(types.StringList)
		case "extends":
			if f, ok := m["file"].(string); ok {
				paths = []string{f}
			}
		}
		for i, p := range paths {
			if !filepath.IsAbs(p) {
				p = filepath.Join(dir, p)
			}
			named = append(named, p)
			if event == "include" && i == 0 {
				envs = append(envs, filepath.Join(filepath.Dir(p), ".env")) // the included project's
			}
		}
	}
	opts, err := cli.NewProjectOptions([]string{path}, append(slices.Clone(base), cli.WithWorkingDirectory(filepath.Dir(path)),
		cli.WithInterpolation(false), cli.WithNormalization(false), cli.WithConsistency(false), cli.WithLoadOptions(func(o *loader.Options) {
			o.SkipValidation = true
			o.Listeners = append(o.Listeners, listen)
		}))...)
	if err == nil {
		_, err = opts.LoadModel(ctx)
	}
	if err != nil {
		return nil, err
	}
	files := envs
	for _, f := range named {
		if seen[f] {
			continue
		}
		seen[f] = true
		files = append(files, f)
		more, err := referenced(ctx, f, base, seen)
		if err != nil {
			return nil, err
		}
		files = append(files, more...)
	}
	return files, nil
}

// envFilePaths are the paths of an env_file section as the loader's model holds it (a list of
// {path, required, format}, each path resolved; a string or a list of strings as written).
func envFilePaths(section any) []string {
	var paths []string
	switch e := section.(type) {
	case string:
		paths = append(paths, e)
	case []any:
		for _, item := range e {
			switch f := item.(type) {
			case string:
				paths = append(paths, f)
			case map[string]any:
				if p, ok := f["path"].(string); ok {
					paths = append(paths, p)
				}
			}
		}
	}
	return paths
}

// valueless are the names an environment section, as the file wrote it (a list or a map), gives
// no value of its own: "- NAME" or "NAME:" with nothing after it, or NAME set to its own variable
// ("NAME: ${NAME}", "- NAME=$NAME", "${NAME:?…}"), which Compose also takes from the shell at `up`.
func valueless(env any) map[string]bool {
	out := map[string]bool{}
	switch e := env.(type) {
	case []any:
		for _, item := range e {
			s, ok := item.(string)
			if !ok {
				continue
			}
			name, v, set := strings.Cut(s, "=")
			if name = strings.TrimSpace(name); !set || passesThrough(name, v) {
				out[name] = true
			}
		}
	case map[string]any:
		for k, v := range e {
			if s, ok := v.(string); v == nil || ok && passesThrough(k, s) {
				out[k] = true
			}
		}
	}
	return out
}

// passesThrough says whether value, as the file wrote it, is only variable name's own value:
// $NAME, ${NAME}, or ${NAME?…} / ${NAME:?…} (required). A default (${NAME:-…}) is a value of the
// file's, not passed through.
func passesThrough(name, value string) bool {
	value = strings.TrimSpace(value)
	if value == "$"+name || value == "${"+name+"}" {
		return true
	}
	rest, ok := strings.CutPrefix(value, "${"+name)
	return ok && strings.HasSuffix(rest, "}") && (strings.HasPrefix(rest, "?") || strings.HasPrefix(rest, ":?"))
}

// envNames are the names an environment section, as the file wrote it (a list or a map), sets,
// with a value or without.
func envNames(env any) map[string]bool {
	out := map[string]bool{}
	switch e := env.(type) {
	case []any:
		for _, item := range e {
			if s, ok := item.(string); ok {
				name, _, _ := strings.Cut(s, "=")
				out[strings.TrimSpace(name)] = true
			}
		}
	case map[string]any:
		for k := range e {
			out[k] = true
		}
	}
	return out
}

// notInName are the characters a Compose project name may not hold.
var notInName = regexp.MustCompile(`[^a-z0-9_-]`)

// projectName is the project name Compose would take from the file's directory.
func projectName(path string) string {
	abs, err := filepath.Abs(path)
	if err != nil {
		return "zero502"
	}
	name := notInName.ReplaceAllString(strings.ToLower(filepath.Base(filepath.Dir(abs))), "")
	if name == "" || name[0] == '_' || name[0] == '-' {
		return "zero502"
	}
	return name
}

// mapped are the service keys zero502 takes over (service below).
var mapped = map[string]bool{
	"image": true, "command": true, "entrypoint": true, "environment": true, "env_file": true,
	"ports": true, "healthcheck": true, "stop_signal": true, "stop_grace_period": true,
	"deploy": true, "profiles": true, "user": true,
	"extends": true, // expanded by the loader before the service is read
}

// advice is what to do about a service key zero502 does not honour; a key in neither table
// gets the general word (unhandled).
var advice = map[string]string{
	"build":          "zero502 deploys images, it builds none: build and push the image in CI (or `zero502 image build`), then set image",
	"volumes":        "not mounted, bind mounts and named volumes alike: zero502 keeps each VOLUME the image declares across deploys and heals in a named volume per host and service, zero502-<host>-<service>-<path>-<hash>, filled from the image on the first deploy; declare the data's directory a VOLUME in the image",
	"networks":       "zero502 runs each container on Docker's default bridge and publishes its port on the host's address: services reach one another through the balancer or the host's address",
	"network_mode":   "zero502 runs each container on Docker's default bridge: remove network_mode",
	"depends_on":     "zero502 starts the services of a host in the config's order, without waiting for one another: list the dependencies first, and make each service retry what it needs",
	"restart":        "zero502's watchdog heals a service after watchdog.heal_after failed checks; the container runs with restart policy no",
	"container_name": "zero502 names containers zero502-<host>-<service>-<version>-<random>, so two versions can run side by side",
	"expose":         "only the published port (ports) is reached, through the balancer",
	"labels":         "zero502 labels its containers itself (host, service, version, address)",
	"secrets":        "not mounted: list the value's variable in services[].secrets (found at deploy time in secrets.file, secrets.command, Secrets Manager or the deploy's environment)",
	"configs":        "not passed to the container: bake the file into the image, or mount it on the host",
	"working_dir":    "the image's WORKDIR is used: set it in the Dockerfile",
	"hostname":       "the container keeps Docker's default hostname",
	"extra_hosts":    "add the names to the image, or to DNS",
	"logging":        "containers log with the engine's default driver; `zero502 logs` reads them",
	"scale":          "zero502 runs one instance of each service per host: add hosts to scale",
}

const unhandled = "zero502 does not set this on the container: remove it, or make it part of the image or the host"

// topLevel is what to do about the file's top-level resources.
var topLevel = map[string]string{
	"volumes":  "not created and not mounted: zero502 keeps each VOLUME a service's image declares across deploys and heals in a named volume per host and service, zero502-<host>-<service>-<path>-<hash>",
	"networks": "zero502 creates no networks: its containers use Docker's default bridge",
	"secrets":  "zero502 mounts no Compose secrets: give each as an environment variable listed in services[].secrets",
	"configs":  "zero502 passes no Compose configs: bake them into the image",
}

// healthURL finds the URL a curl or wget health check asks for.
var healthURL = regexp.MustCompile(`https?://[^\s"'/]+(/[^\s"'|;&]*)?`)

// service adds sc (whose keys, as the file set them, are keys) to im, or says which of its fields
// interpolate a secret (secrets holds their tokens), each refused.
func (im *Import) service(sc types.ServiceConfig, keys map[string]any, secrets *seal) []error {
	note := func(key, what string) { im.Notes = append(im.Notes, Note{Service: sc.Name, Key: key, What: what}) }
	var refused []error
	refuse := func(key string, values ...string) {
		if name := secrets.secretIn(values...); name != "" {
			field := "services." + sc.Name
			if key != "" {
				field += "." + key
			}
			refused = append(refused, refusal(field, name))
		}
	}
	refuse("image", sc.Image)
	refuse("entrypoint", sc.Entrypoint...)
	refuse("command", sc.Command...)
	refuse("user", sc.User)
	refuse("stop_signal", sc.StopSignal)
	svc := config.Service{Name: sc.Name, Image: sc.Image, User: sc.User, StopSignal: sc.StopSignal}
	if svc.Image == "" {
		note("image", "no image: zero502 deploys images; build and push one, then set image (services[].image; {version} stands for the version deployed)")
	} else if !strings.Contains(svc.Image, "{version}") {
		note("image", fmt.Sprintf("%s names no {version}: every deploy would run this same image; put {version} where its tag is (zero502 deploy --version V runs the image tagged V)", shown(svc.Image)))
	}
	placeholderNote := func(key string, values ...string) {
		var found []string
		for _, v := range values {
			for _, p := range placeholders(v) {
				if !slices.Contains(found, p) && (key != "image" || p != "{version}") { // the tag deployed: the image's own
					found = append(found, p)
				}
			}
		}
		if len(found) > 0 {
			note(key, fmt.Sprintf("%s: zero502 fills in its placeholders ({host}, {port}, {address}, {version}, … as services[].command "+
				"lists them) at each deploy, where Compose passes the text as written: nothing to do if they are meant for zero502; if "+
				"the program needs the braces as written, build the text in the program or the image (zero502 has no escape for them)", strings.Join(found, ", ")))
		}
	}
	placeholderNote("image", sc.Image)
	placeholderNote("entrypoint", sc.Entrypoint...)
	placeholderNote("command", sc.Command...)
	svc.Command = append(append([]string{}, sc.Entrypoint...), sc.Command...)
	if len(sc.Entrypoint) > 0 {
		note("entrypoint", "zero502 sets the container's command only: the entrypoint and the command are joined into services[].command, which replaces the image's CMD (an image ENTRYPOINT would still run first: check it)")
	} else if keys["entrypoint"] != nil {
		// [] or "": Compose runs the container without the image's ENTRYPOINT; zero502's
		// services have no key for it
		note("entrypoint", "cleared in Compose; zero502's docker runtime keeps the image's ENTRYPOINT, which runs with services[].command as its arguments: build an image without an ENTRYPOINT (or whose ENTRYPOINT runs its arguments)")
	}
	if len(sc.Command) == 0 && keys["command"] != nil {
		note("command", "cleared in Compose; zero502's docker runtime keeps the image's CMD when services[].command is empty: build an image without a CMD, or set services[].command")
	}
	fromShell, inFile := valueless(keys["environment"]), envNames(keys["environment"])
	envFileShell := map[string]bool{} // the names an env_file takes from the environment
	for _, f := range sc.EnvFiles {
		maps.Copy(envFileShell, fromEnvironment(f.Path))
	}
	for _, k := range slices.Sorted(maps.Keys(sc.Environment)) {
		v := sc.Environment[k]
		if !inFile[k] && envFileShell[k] && !secrets.sealed(k) {
			// secretNames reads the env_files whose path is written as is
			refused = append(refused, fmt.Errorf("services.%s.env_file: %s: listed without a value (or set to $%s), so Compose "+
				"takes it from the environment, a secret's way in; but the env_file's path is interpolated, and the import "+
				"reads a secret's name before interpolation: write the path without ${…}, or list %s under environment: too", sc.Name, k, k, k))
			continue
		}
		if !inFile[k] && v != nil && secrets.sealed(k) && *v == secrets.tokens[k] {
			// an env_file's bare NAME (or NAME=${NAME}): Compose takes it from the shell, as it
			// does "- NAME" under environment:, and so does the import (below)
			fromShell[k] = true
		}
		if fromShell[k] {
			// Compose takes it from the shell at `up` time: a secret's way in. It becomes one of
			// services[].secrets, found when the deploy starts, and its value goes into no
			// config and no spec (the loader had its token, never its value).
			if !secrets.sealed(k) {
				// secretNames reads the file uninterpolated: only a name written as ${…} is missed
				refused = append(refused, fmt.Errorf("services.%s.environment: %s: a secret's name comes from interpolation: write the name itself", sc.Name, k))
			}
			refuse("environment", k)
			svc.Secrets = append(svc.Secrets, k)
			continue
		}
		if v == nil {
			note("environment."+k, "has no value here: set it in services[].env, or list it in services[].secrets")
			continue
		}
		if inFile[k] {
			refuse("environment."+k, k, *v)
			placeholderNote("environment."+k, *v)
		} else {
			refuse("env_file ("+k+")", k, *v)
			placeholderNote("env_file ("+k+")", *v)
		}
		if svc.Env == nil {
			svc.Env = map[string]string{}
		}
		svc.Env[k] = *v
	}
	sort.Strings(svc.Secrets)
	if len(sc.EnvFiles) > 0 {
		note("env_file", "read now, at import: its values are in services[].env, and a name it lists without a value (or sets to its own "+
			"variable) is one of services[].secrets, as under environment:; move a secret's value to secrets.file and list its name in services[].secrets")
	}
	first := true // the first TCP port is the service's; zero502 balances TCP and HTTP only
	for _, p := range sc.Ports {
		if p.Protocol != "" && !strings.EqualFold(p.Protocol, "tcp") {
			note("ports", fmt.Sprintf("%s: zero502 balances TCP and HTTP only: this %s port is not published and is not services[].port; serve it outside zero502", portString(p), shown(p.Protocol)))
			continue
		}
		if !first {
			note("ports", fmt.Sprintf("only the first published TCP port is balanced: %s is not published", portString(p)))
			continue
		}
		first = false
		pub, err := strconv.Atoi(p.Published)
		if err != nil || pub == 0 {
			note("ports", fmt.Sprintf("port %s is not published on a fixed host port: publish it (host:container) so the balancer can reach it", portString(p)))
			continue
		}
		if uint32(pub) != p.Target {
			note("ports", fmt.Sprintf("%s: zero502 publishes a port to the same port in the container; services[].port is %d, so make the service listen on %d (or publish %d:%d)", portString(p), pub, pub, p.Target, p.Target))
		}
		if p.HostIP != "" {
			note("ports", fmt.Sprintf("%s: host_ip %s: zero502 publishes on the host's address (hosts[].address)", portString(p), shown(p.HostIP)))
		}
		svc.Port = pub
	}
	portKeyNotes(note, keys)
	if hc := sc.HealthCheck; hc != nil && healthOff(hc) {
		note("healthcheck", healthInstead(svc, "disabled in Compose"))
	} else if hc != nil && len(hc.Test) > 0 {
		test := strings.Join(hc.Test, " ")
		if m := healthURL.FindStringSubmatch(test); m != nil && (strings.Contains(test, "curl") || strings.Contains(test, "wget")) {
			svc.Health.Path = m[1]
			if svc.Health.Path == "" {
				svc.Health.Path = "/"
			}
			refuse("healthcheck.test", svc.Health.Path)
			if hc.Timeout != nil {
				svc.Health.Timeout = time.Duration(*hc.Timeout)
			}
			note("healthcheck", fmt.Sprintf("the deployer, the watchdog and the balancer GET %s on the service's port and want 200 (services[].health); interval and retries are the balancer's (balancer.interval, unhealthy_threshold); %s", shown(svc.Health.Path), imageHealthcheck))
			hk, _ := keys["healthcheck"].(map[string]any)
			if _, ok := hk["start_period"]; ok && hc.StartPeriod != nil {
				note("healthcheck.start_period", fmt.Sprintf("%s: zero502 has no start period: a new instance gets rollout.healthy_deadline (default 60s) to become healthy, so set that above the start period", time.Duration(*hc.StartPeriod)))
			}
			if _, ok := hk["start_interval"]; ok && hc.StartInterval != nil {
				note("healthcheck.start_interval", fmt.Sprintf("%s: zero502 has no start interval: a starting instance is checked as any other (balancer.interval at the balancer)", time.Duration(*hc.StartInterval)))
			}
		} else {
			note("healthcheck", healthInstead(svc, fmt.Sprintf("%q is not an HTTP check zero502 can run", test)))
		}
	}
	if sc.StopGracePeriod != nil {
		im.StopGrace = max(im.StopGrace, time.Duration(*sc.StopGracePeriod))
	}
	order := updateOrder(sc)
	if d := sc.Deploy; d != nil {
		if order != "" && order != im.Strategy {
			note("deploy.update_config.order", fmt.Sprintf("rollout.strategy is one for the fleet: kept %s", im.Strategy))
		}
		if u := d.UpdateConfig; u != nil && u.Parallelism != nil && *u.Parallelism == 0 {
			note("deploy.update_config.parallelism", "0 (Swarm: every task at once): zero502 never takes the whole fleet at once, a batch leaves a healthy host (invariant I8): rollout.batch is left to the config (default 1)")
		} else if u != nil && u.Parallelism != nil && *u.Parallelism > 0 {
			if im.Batch != 0 && im.Batch != int(*u.Parallelism) {
				note("deploy.update_config.parallelism", fmt.Sprintf("rollout.batch is one number for the fleet: kept %d", im.Batch))
			} else {
				im.Batch = int(*u.Parallelism)
			}
		}
		if d.Replicas != nil && *d.Replicas != 1 {
			note("deploy.replicas", "zero502 runs one instance of each service per host: add hosts to scale")
		}
		dk, _ := keys["deploy"].(map[string]any)
		deployNotes(note, dk)
	}
	if svc.Port > 0 {
		// a service that knows nothing of zero502 leaves rotation at the balancer first
		svc.Drain = config.DrainBalancer
	}
	if im.Strategy == config.StartFirst && svc.Port > 0 {
		svc.Ports = []int{svc.Port, svc.Port + 1}
		key := "ports" // the fleet's strategy, which another service's update_config.order set
		if order == config.StartFirst {
			key = "deploy.update_config.order"
		}
		note(key, fmt.Sprintf("start-first runs the new instance beside the old on the other of services[].ports [%d, %d]: the service must listen on {port} (pass it in its command or env)", svc.Port, svc.Port+1))
	}
	names := make([]string, 0, len(keys))
	for k := range keys {
		names = append(names, k)
	}
	slices.Sort(names)
	for _, k := range names {
		if mapped[k] || k == "name" {
			continue
		}
		if a, ok := advice[k]; ok {
			note(k, a)
		} else {
			note(k, unhandled)
		}
	}
	if len(refused) == 0 {
		// what a field above does not name: anything else of the service the import sets
		refuse("", fmt.Sprintf("%+v", svc))
	}
	if len(refused) > 0 {
		return refused
	}
	im.Services = append(im.Services, svc)
	return nil
}

// braced is what may be a placeholder of zero502's: a word in braces.
var braced = regexp.MustCompile(`\{[^{}\s]+\}`)

// placeholders are zero502's placeholders in s ({host}, {port}, …: what spec.RenderOn fills in a
// service's image, command words and env values at each deploy), each once, in order.
func placeholders(s string) []string {
	var out []string
	for _, p := range braced.FindAllString(s, -1) {
		if !slices.Contains(out, p) && filled(p) {
			out = append(out, p)
		}
	}
	return out
}

// filled says whether zero502 fills p in when it renders a service: spec.Render itself is asked
// (of a command word p), so the placeholders are always spec's own.
func filled(p string) bool {
	probe := &config.Config{Services: []config.Service{{Name: "probe", Command: []string{p}}}}
	return spec.Render(probe, config.Host{}, "", "").Services[0].Command[0] != p
}

// updateOrder is the rollout strategy sc's deploy.update_config.order asks for ("" for none).
func updateOrder(sc types.ServiceConfig) string {
	if sc.Deploy == nil || sc.Deploy.UpdateConfig == nil {
		return ""
	}
	switch sc.Deploy.UpdateConfig.Order {
	case "start-first":
		return config.StartFirst
	case "stop-first":
		return config.StopFirst
	}
	return ""
}

// deployAdvice is what zero502 does instead of a deploy key it does not honour; replicas,
// update_config and resources are read key by key (deployNotes).
var deployAdvice = map[string]string{
	"restart_policy":  advice["restart"],
	"placement":       "zero502 runs every service on every host of the fleet (hosts[]): constraints and preferences are not applied; give the services that must run elsewhere their own config and hosts",
	"rollback_config": "a host that fails is rolled back to its last good spec at once and the rollout stops; rollback parallelism, order and delay are not set",
	"labels":          "zero502 labels its containers itself (host, service, version, address), and there is no Swarm service to label",
	"endpoint_mode":   "the balancer reaches each instance on its host's address and port (hosts[].address): there is no virtual IP or DNS round robin",
	"mode":            "zero502 runs one long-running instance of each service on every host of the fleet (as global does): jobs and replica counts across a cluster are not honoured",
}

// updateAdvice is what zero502 does instead of an update_config key it does not honour.
var updateAdvice = map[string]string{
	"delay":             "zero502 waits for no delay between batches: each batch is in rotation, baked (rollout.bake) and verified before the next starts",
	"failure_action":    "a host that fails is rolled back to its last good spec and the rollout stops (the deploy exits 1): pause and continue are not offered",
	"monitor":           "set rollout.bake: how long each new instance must stay healthy before its host counts as deployed",
	"max_failure_ratio": "zero502 tolerates no failed host: the first failure rolls its host back and stops the rollout",
}

const resourcesAdvice = "zero502 sets no CPU, memory, pids or device limits or reservations on the container (`docker compose up` applies them): it runs unbounded, so size each host for its services"

// deployNotes notes each key of a service's deploy section (dk, as the file set it) that
// zero502 does not honour.
func deployNotes(note func(key, what string), dk map[string]any) {
	for _, k := range slices.Sorted(maps.Keys(dk)) {
		v := dk[k]
		switch {
		case k == "replicas" || strings.HasPrefix(k, "x-"): // read above; extensions are no one's
		case k == "mode" && (v == "global" || v == "replicated"): // one instance per host
		case k == "update_config":
			uk, _ := v.(map[string]any)
			for _, u := range slices.Sorted(maps.Keys(uk)) {
				switch {
				case u == "order" || u == "parallelism" || strings.HasPrefix(u, "x-"): // read above
				case updateAdvice[u] != "":
					note("deploy.update_config."+u, fmt.Sprintf("%s: %s", shown(uk[u]), updateAdvice[u]))
				default:
					note("deploy.update_config."+u, unhandled)
				}
			}
		case k == "resources":
			resourceNotes(note, "deploy.resources", v)
		case k == "mode" || k == "endpoint_mode":
			note("deploy."+k, fmt.Sprintf("%s: %s", shown(v), deployAdvice[k]))
		case deployAdvice[k] != "":
			note("deploy."+k, deployAdvice[k])
		default:
			note("deploy."+k, unhandled)
		}
	}
}

// resourceNotes notes each value under deploy.resources (key, as the file set it).
func resourceNotes(note func(key, what string), key string, v any) {
	switch r := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(r)) {
			resourceNotes(note, key+"."+k, r[k])
		}
	case []any, nil: // devices: a list of requests
		note(key, resourcesAdvice)
	default:
		note(key, fmt.Sprintf("%s: %s", shown(r), resourcesAdvice))
	}
}

// healthOff says whether hc turns the image's health check off (disable: true, or test: [NONE]).
func healthOff(hc *types.HealthCheckConfig) bool {
	return hc.Disable || (len(hc.Test) > 0 && strings.EqualFold(hc.Test[0], "NONE"))
}

// healthInstead says, after why a Compose health check is not taken, how zero502 judges svc: a
// service with a port by an HTTP GET of the default health path (the import sets none), one
// without by its container's state.
func healthInstead(svc config.Service, why string) string {
	if svc.Port == 0 {
		return why + ": the service has no port, so it is judged by its container's state only; " + imageHealthcheck
	}
	return fmt.Sprintf("%s: the deployer, the watchdog and the balancer GET the default health path "+
		"(balancer.health_path, /health unless set) on port %d and want 200: serve it, or set the service's "+
		"HTTP health path (services[].health.path); %s", why, svc.Port, imageHealthcheck)
}

// imageHealthcheck is what every healthcheck note adds: Compose's healthcheck replaces the image's
// HEALTHCHECK (disable and test: [NONE] turn it off), zero502's docker runtime leaves it on, and
// the deployer and the watchdog take its unhealthy as the instance's.
const imageHealthcheck = "the image's own HEALTHCHECK, if it has one, still runs in the container (zero502 neither replaces " +
	"nor turns it off, as Compose does): its unhealthy fails a deploy and has the watchdog heal the instance, so build the " +
	"image without a HEALTHCHECK that does not fit"

// portKeys are what a long-syntax port entry may say that zero502 does not take, and why.
var portKeys = map[string]string{
	"name":         "zero502 keeps no port names",
	"app_protocol": "zero502 does not read it: the balancer speaks HTTP/1.1 (or TCP at the edge) to the port",
}

// portKeyNotes notes each key of the long-syntax port entries (keys["ports"]) that portKeys
// lists. (Not mode: compose-go writes mode: ingress into every short-syntax port too, and outside
// Swarm Compose ignores it, as zero502 does, publishing on each host's own address.)
func portKeyNotes(note func(key, what string), keys map[string]any) {
	entries, _ := keys["ports"].([]any)
	for _, e := range entries {
		m, ok := e.(map[string]any)
		if !ok {
			continue
		}
		for _, k := range []string{"name", "app_protocol"} {
			if v, ok := m[k]; ok {
				note("ports", fmt.Sprintf("%s:%s: %s %s: %s", shown(m["published"]), shown(m["target"]), k, shown(v), portKeys[k]))
			}
		}
	}
}

// portString is p as the file could write it, with its protocol: 8080:80/tcp (shown: quoted if
// the file's published or protocol is not plain).
func portString(p types.ServicePortConfig) string {
	s := strconv.Itoa(int(p.Target))
	if p.Published != "" {
		s = p.Published + ":" + s
	}
	if p.Protocol != "" {
		s += "/" + p.Protocol
	}
	return shown(s)
}

// services_from: in a config reads the services of a Compose file through Load, with the notes
// `zero502 init --from-compose` prints (a deploy reports them); rollout numbers stay the config's.
func init() {
	config.ServicesFromFile = func(path string) ([]config.Service, []string, error) {
		var o Options
		if os.Geteuid() == 0 {
			// as the Compose file itself (config's readServicesFrom): what its services read
			// names the images, commands and environment a deploy runs as root
			o.Check = func(p string) error {
				if err := trust.Check(p, 0); err != nil {
					return fmt.Errorf("%w: root reads only files that are root's alone for services_from (the .env beside "+
						"the Compose file, each env_file, and the files include and extends name): make it and every directory "+
						"above it root's, writable by no one else", err)
				}
				return nil
			}
		}
		im, err := Load(context.Background(), path, o)
		if err != nil {
			return nil, nil, err
		}
		return im.Services, im.servicesFromNotes(), nil
	}
}

// servicesFromNotes are im's notes as lines, and the Compose keys `init --from-compose` turns
// into rollout numbers, which services_from leaves to the zero502 config: no key goes unsaid.
func (im *Import) servicesFromNotes() []string {
	notes := make([]string, 0, len(im.Notes)+3)
	for _, n := range im.Notes {
		notes = append(notes, n.String())
	}
	const keep = "services_from takes the rollout's numbers from the zero502 config, not from Compose: set %s: %v there"
	if im.Strategy != "" {
		notes = append(notes, "deploy.update_config.order: "+fmt.Sprintf(keep, "rollout.strategy", im.Strategy))
	}
	if im.Batch != 0 {
		notes = append(notes, "deploy.update_config.parallelism: "+fmt.Sprintf(keep, "rollout.batch", im.Batch))
	}
	if im.StopGrace != 0 {
		notes = append(notes, "stop_grace_period: "+fmt.Sprintf(keep, "drain.stop_grace", im.StopGrace)+
			" (above drain.window + drain.shutdown: I2)")
	}
	return notes
}
