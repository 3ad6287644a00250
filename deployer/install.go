package deployer

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/zero502/zero502/deployer/ssh"
)

// The paths the shipped systemd units name; Install.Script rewrites them to where the binary
// and the config go on the server.
const (
	unitBinary    = "/usr/local/bin/zero502"
	unitConfigDir = "/etc/zero502/"
)

// Install is what `zero502 host install` puts on a server over ssh: the zero502 binary, its
// state and config dirs, and the daemons' systemd units.
type Install struct {
	// Binary is where the binary goes on the server (--dest).
	Binary string
	// StateDir is the host's state dir (watchdog.state_dir); ConfigDir holds the config and the
	// units' environment files; UnitDir receives the units.
	StateDir, ConfigDir, UnitDir string
	// Units are the systemd units (*.service at the root), written as they are except that
	// /usr/local/bin/zero502 becomes Binary and /etc/zero502/ becomes ConfigDir.
	Units fs.FS
}

// Script is the shell script, run by the server's sh, that installs in: the binary from stdin
// to Binary (through a temporary file and a rename, mode 0755), the dirs, each unit into UnitDir
// (mode 0644, also through a rename), a daemon-reload when systemd runs, then `Binary version`
// as the proof the new binary runs there. Every path is quoted for the shell; the script stops
// at the first failing command.
func (in Install) Script() (string, error) {
	q := ssh.ShellQuote
	var b strings.Builder
	fmt.Fprintf(&b, "set -e; umask 022; mkdir -p %s %s %s %s; ", q(path.Dir(in.Binary)), q(in.StateDir), q(in.ConfigDir), q(in.UnitDir))
	fmt.Fprintf(&b, "cat > %[1]s.new; chmod 755 %[1]s.new; mv %[1]s.new %[1]s; ", q(in.Binary))
	names, err := fs.Glob(in.Units, "*.service")
	if err != nil {
		return "", fmt.Errorf("install: listing the systemd units: %w", err)
	}
	for _, name := range names {
		data, err := fs.ReadFile(in.Units, name)
		if err != nil {
			return "", fmt.Errorf("install: reading the systemd unit %s: %w", name, err)
		}
		text := strings.ReplaceAll(string(data), unitBinary, in.Binary)
		text = strings.ReplaceAll(text, unitConfigDir, strings.TrimSuffix(in.ConfigDir, "/")+"/")
		to := path.Join(in.UnitDir, name)
		fmt.Fprintf(&b, "printf '%%s' %[1]s > %[2]s.new; chmod 644 %[2]s.new; mv %[2]s.new %[2]s; ", q(text), q(to))
	}
	b.WriteString("if [ -d /run/systemd/system ]; then systemctl daemon-reload; fi; ")
	fmt.Fprintf(&b, "%s version", q(in.Binary))
	return b.String(), nil
}
