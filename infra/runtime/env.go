package runtime

import (
	"os/user"
	"sort"
)

// BasePath is the PATH a process-runtime service starts with: the standard directories, never
// the PATH of whoever ran the deploy or the watchdog.
const BasePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BaseEnv is the fixed environment every process-runtime service starts with, whoever starts it
// (a deploy from a shell, the watchdog under systemd): PATH=BasePath, HOME (the running user's
// home in the user database, "/" when it has none), LANG=C.UTF-8 and TZ=UTC. Nothing else of the
// starter's environment reaches a service: no cloud or CI credentials, no SSH_AUTH_SOCK, no
// ZERO502_* variable. services[].env overrides any of these.
func BaseEnv() map[string]string {
	home := "/"
	if u, err := user.Current(); err == nil && u.HomeDir != "" {
		home = u.HomeDir
	}
	return map[string]string{"PATH": BasePath, "HOME": home, "LANG": "C.UTF-8", "TZ": "UTC"}
}

// ServiceEnv is the whole environment of a process-runtime service: BaseEnv with the service's
// configured env (services[].env, as published in the spec) on top, as KEY=value lines.
func ServiceEnv(configured map[string]string) []string {
	env := BaseEnv()
	for k, v := range configured {
		env[k] = v
	}
	return EnvList(env)
}

// EnvList turns an environment map into KEY=value lines in key order. The docker runtime gives a
// container exactly EnvList(svc.Env): the image's own ENV stays as Docker defines it.
func EnvList(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}
