package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// serviceDir is the working directory of every service (cmd.Dir), whoever starts it: "/", as
// systemd's default WorkingDirectory for a system service. A relative argument of a service
// (python3 app.py) is relative to it, never to the deployer's or the watchdog's directory.
const serviceDir = "/"

// lookPath finds a command's program the way its own environment would, and returns it as an
// absolute path, so that nothing of the starter (its working directory, its PATH) decides what
// runs: a name with a slash is used as it is, a relative one (./server) taken from serviceDir,
// where the service runs; a bare name is searched in the PATH of env (the service's
// environment), not in the starter's. An empty or relative PATH element (a leading or trailing
// ':', "bin") is skipped, as Go's exec.ErrDot rule skips it: it would name a directory of
// whoever starts the service. A name found nowhere is an error naming that PATH (never a file of
// the current directory).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		if !filepath.IsAbs(name) {
			return filepath.Join(serviceDir, name), nil
		}
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if !filepath.IsAbs(dir) {
			continue // "" or relative: the starter's working directory would decide
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is not an executable in the service's PATH %s (empty and relative elements are skipped); "+
		"give services[].command an absolute path, or set PATH in services[].env to absolute directories", name, path)
}
