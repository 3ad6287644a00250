package process

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// lookPath finds a command's program the way its own environment would: a name with a slash is
// used as it is, a bare name is searched in the PATH of env (the service's environment), not in
// the starter's, so whoever starts the service runs the same program. A name found nowhere is
// an error naming that PATH (never a file of the current directory).
func lookPath(name string, env []string) (string, error) {
	if strings.Contains(name, "/") {
		return name, nil
	}
	path := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "PATH="); ok {
			path = v
		}
	}
	for _, dir := range filepath.SplitList(path) {
		if dir == "" {
			dir = "."
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q is not an executable in the service's PATH %s; give services[].command an absolute path, or set PATH in services[].env", name, path)
}
