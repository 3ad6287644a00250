package main

import (
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/zero502/zero502/deployer"
)

// daemonUnits are the systemd units of the long-running daemons (lb, edge, mesh), shipped in
// the binary so `zero502 host install` puts them on a server. The watchdog's units are in
// watchdog/systemd.
//
//go:embed units/*.service
var daemonUnits embed.FS

// installScript is the shell script `zero502 host install` runs on the server: the binary from
// stdin to dest (atomically, mode 0755), the state and config dirs, each unit into unitDir
// (mode 0644) naming dest as its ExecStart, a daemon-reload when systemd runs, then the new
// binary's version as the proof it runs there.
func installScript(dest, stateDir, configDir, unitDir string) (string, error) {
	q := deployer.ShellQuote
	var b strings.Builder
	fmt.Fprintf(&b, "set -e; umask 022; mkdir -p %s %s %s %s; ", q(path.Dir(dest)), q(stateDir), q(configDir), q(unitDir))
	fmt.Fprintf(&b, "cat > %[1]s.new; chmod 755 %[1]s.new; mv %[1]s.new %[1]s; ", q(dest))
	names, err := fs.Glob(daemonUnits, "units/*.service")
	if err != nil {
		return "", err
	}
	for _, name := range names {
		data, err := daemonUnits.ReadFile(name)
		if err != nil {
			return "", err
		}
		text := strings.ReplaceAll(string(data), "/usr/local/bin/zero502", dest)
		text = strings.ReplaceAll(text, "/etc/zero502/", strings.TrimSuffix(configDir, "/")+"/")
		to := path.Join(unitDir, path.Base(name))
		fmt.Fprintf(&b, "printf '%%s' %[1]s > %[2]s.new; chmod 644 %[2]s.new; mv %[2]s.new %[2]s; ", q(text), q(to))
	}
	b.WriteString("if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; ")
	fmt.Fprintf(&b, "%s version", q(dest))
	return b.String(), nil
}
