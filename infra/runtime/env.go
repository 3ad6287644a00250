package runtime

import "sort"

// BasePath is the PATH a process-runtime service starts with: the standard directories, never
// the PATH of whoever ran the deploy or the watchdog.
const BasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BaseEnv is the fixed environment every process-runtime service starts with, whoever starts it
// (a deploy from a shell, the watchdog under systemd), for the user zero502 runs as: baseEnvAs
// of that user.
func BaseEnv() map[string]string {
	a, err := LookupAccount("")
	if err != nil {
		a = Account{Home: "/"}
	}
	return baseEnvAs(a)
}

// baseEnvAs is the fixed environment of a service run as a: PATH=BasePath, HOME (a's home in the
// user database, "/" when it has none), USER and LOGNAME (a's name), LANG=C.UTF-8 and TZ=UTC.
// Nothing else of the starter's environment reaches a service: no cloud or CI credentials, no
// SSH_AUTH_SOCK, no ZERO502_* variable. services[].env overrides any of these.
func baseEnvAs(a Account) map[string]string {
	env := map[string]string{"PATH": BasePath, "HOME": a.Home, "LANG": "C.UTF-8", "TZ": "UTC"}
	if a.Name != "" {
		env["USER"], env["LOGNAME"] = a.Name, a.Name
	}
	return env
}

// ServiceEnv is the whole environment of a process-runtime service run as a: baseEnvAs(a) with
// the service's configured env (services[].env, as published in the spec) on top, as KEY=value
// lines.
func ServiceEnv(a Account, configured map[string]string) []string {
	env := baseEnvAs(a)
	for k, v := range configured {
		env[k] = v
	}
	return EnvList(env)
}

// EnvList turns an environment map into KEY=value lines in key order. The docker runtime gives a
// container exactly EnvList(svc.Environment()): the image's own ENV stays as Docker defines it.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
