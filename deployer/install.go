package deployer

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/ssh"
	"github.com/zero502/zero502/watchdog"
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
	// WatchdogInterval, when set, installs the watchdog's units too (watchdog.Units, rewritten
	// like Units): zero502-watchdog.service, and zero502-watchdog.timer ticking every
	// WatchdogInterval, which must be the watchdog.interval of the config the watchdog reads on
	// the server. Zero installs neither.
	WatchdogInterval time.Duration
	// Size and SHA256 (hex) are those of the binary sent on the script's stdin: the script
	// refuses an upload that differs (cut short, or changed on the way). They are not secret and
	// go on the script's command line. SHA256 "" checks neither; the upload must still be
	// non-empty and run there.
	Size   int64
	SHA256 string
}

// InstallKept is the exit status of the install script when it failed before replacing
// anything: the server keeps its previous binary and units (and the new ones are removed).
const InstallKept = 3

// InstallPartly is the exit status of the install script when the new binary, checked, is in
// place, but a later step failed (moving a unit into place, systemd's daemon-reload).
const InstallPartly = 4

// plainPath is what an install path may hold: what a unit's ExecStart= takes as it is.
var plainPath = regexp.MustCompile(`^/[A-Za-z0-9/._+@:-]*$`)

// Check refuses paths that are not absolute, naming the flag they come from: they are the
// server's, and a relative one would land wherever the ssh login starts.
func (in Install) Check() error {
	for _, p := range []struct{ flag, value, like string }{
		{"--dest", in.Binary, "/usr/local/bin/zero502"}, {"--state-dir", in.StateDir, "/var/lib/zero502"},
		{"--config-dir", in.ConfigDir, "/etc/zero502"}, {"--unit-dir", in.UnitDir, "/etc/systemd/system"},
	} {
		if !path.IsAbs(p.value) {
			return fmt.Errorf("%s %q: must be an absolute path on the server (as %s); nothing was sent", p.flag, p.value, p.like)
		}
		if !plainPath.MatchString(p.value) {
			return fmt.Errorf("%s %q: must be a plain path (letters, digits and / . _ - + @ :): it is written into the systemd units "+
				"(ExecStart=), where a space, quote, %% or line break would change the unit; nothing was sent", p.flag, p.value)
		}
	}
	if strings.HasSuffix(in.Binary, "/") {
		return fmt.Errorf("--dest %q: must be the binary's file path, not a directory (as /usr/local/bin/zero502); nothing was sent", in.Binary)
	}
	if in.SHA256 != "" {
		if len(in.SHA256) != 64 || strings.Trim(in.SHA256, "0123456789abcdef") != "" {
			return fmt.Errorf("install: the binary's sha256 %q is not 64 lower-case hex digits", in.SHA256)
		}
		if in.Size <= 0 {
			return fmt.Errorf("install: the binary to send is empty: --binary must name a zero502 built for the server's OS and CPU")
		}
	}
	return nil
}

// Script is the shell script, run by the server's sh, that installs in, replacing nothing until
// everything new is there and checked: the binary from stdin into Binary.new, checked (its byte
// count and sha256 against Size and SHA256, non-empty, and `Binary.new version` must run there
// and print its version: a binary for another OS or CPU does not), the dirs (StateDir made 0750),
// each unit into UnitDir as NAME.new (mode 0644); then the renames, the binary's first; a
// daemon-reload when systemd runs (as root only); and the new binary's version printed as the
// proof it runs. A failure before the binary's rename removes the .new files and exits
// InstallKept: the server keeps its previous binary; one after it exits InstallPartly. Every
// path is quoted for the shell; the script stops at the first failing command. Check's errors
// come first.
//
// A user other than root (deploy@) who cannot write where the binary or the units go, or where
// a missing dir must be made (/usr/local/bin, /etc/systemd/system: root's), runs all of it
// through `sudo -n` (never a password prompt: there is no terminal to answer it), and a StateDir
// it makes is then that user's, as the deploys that log in as that user write it. Without sudo,
// or when sudo -n refuses (a password needed, no sudoers rule), the script exits InstallKept
// before reading anything, saying what needs root and what to do.
func (in Install) Script() (string, error) {
	if err := in.Check(); err != nil {
		return "", err
	}
	q := ssh.ShellQuote
	units, err := in.units()
	if err != nil {
		return "", err
	}
	newFiles := []string{q(in.Binary + ".new")}
	for _, u := range units {
		newFiles = append(newFiles, q(path.Join(in.UnitDir, u.Name)+".new"))
	}
	var b strings.Builder
	// The trap: on a failure before the binary's rename, remove what was written and say the
	// server keeps its binary; after it, say the new binary is in place. A signal (the ssh
	// session hung up) ends the script through it too.
	trap := fmt.Sprintf(`st=$?; trap - EXIT; rm -f %[1]s; if [ "$st" -ne 0 ]; then if [ -z "$replaced" ]; then `+
		`echo %[2]s >&2; exit %[3]d; fi; echo %[4]s >&2; exit %[5]d; fi`,
		strings.Join(newFiles, " "),
		q("zero502 host install: failed before replacing anything: "+in.Binary+" is still the previous binary, the units the previous units"),
		InstallKept,
		q("zero502 host install: "+in.Binary+" is the new binary, checked, but a later step failed (above): fix it and install again"),
		InstallPartly)
	// $1 and $2: the uid and gid a state dir made here belongs to (empty: whoever runs this).
	fmt.Fprintf(&b, "set -e; umask 022; owner=${1:-}; group=${2:-}; replaced=; trap %s EXIT; trap 'exit 1' HUP INT TERM PIPE; ", q(trap))
	fmt.Fprintf(&b, "mkdir -p %s %s %s; ", q(path.Dir(in.Binary)), q(in.ConfigDir), q(in.UnitDir))
	fmt.Fprintf(&b, `if [ ! -d %[1]s ]; then mkdir -p -m 0750 %[1]s; if [ -n "$owner" ]; then chown "$owner:$group" %[1]s; fi; fi; `, q(in.StateDir))
	// The directories the binary and the units go to, and every one above them, pass the trust
	// rule (infra/trust, here in sh): owned by root or this user, and writable by no one else
	// but where sticky (/tmp). Else another user could swap Binary.new between its check and
	// its rename, or plant a link where it is written.
	fmt.Fprintf(&b, `u=$(id -u); for d in %s %s; do while :; do `+
		`if [ -n "$(find -H "$d" -prune ! -perm -1000 \( -perm -0020 -o -perm -0002 \) -print)" ] || `+
		`[ -z "$(find -H "$d" -prune \( -user 0 -o -user "$u" \) -print)" ]; then `+
		`echo "zero502 host install: $d is owned by another user or writable by group or others: another user could replace what is installed below it; chown root and chmod go-w it, or install elsewhere" >&2; exit 1; fi; `+
		`[ "$d" = / ] && break; d=$(dirname "$d"); done; done; `, q(path.Dir(in.Binary)), q(in.UnitDir))
	newBin := q(in.Binary + ".new")
	// written only as a new file: a link planted at Binary.new is not written through
	fmt.Fprintf(&b, "rm -f %[1]s; (set -C; cat > %[1]s); ", newBin)
	fmt.Fprintf(&b, `[ -s %[1]s ] || { echo 'zero502 host install: received an empty binary' >&2; exit 1; }; `, newBin)
	if in.SHA256 != "" {
		fmt.Fprintf(&b, `n=$(wc -c < %[1]s); n=$((n+0)); [ "$n" -eq %[2]d ] || `+
			`{ echo "zero502 host install: received $n bytes of the %[2]d sent: the upload was cut short" >&2; exit 1; }; `, newBin, in.Size)
		fmt.Fprintf(&b, `if command -v sha256sum >/dev/null 2>&1; then sum=$(sha256sum < %[1]s); `+
			`elif command -v shasum >/dev/null 2>&1; then sum=$(shasum -a 256 < %[1]s); `+
			`else echo 'zero502 host install: neither sha256sum nor shasum on the server to check the upload' >&2; exit 1; fi; `+
			`sum=${sum%%%% *}; [ "$sum" = %[2]s ] || `+
			`{ echo "zero502 host install: received a binary of sha256 $sum, not the %[2]s sent: the upload was changed on the way" >&2; exit 1; }; `,
			newBin, in.SHA256)
	}
	fmt.Fprintf(&b, `chmod 755 %[1]s; v=$(%[1]s version) && [ -n "$v" ] || `+
		`{ echo 'zero502 host install: the new binary does not run here (built for another OS or CPU?): its version printed nothing or failed' >&2; exit 1; }; `,
		newBin)
	for _, u := range units {
		text := strings.ReplaceAll(u.Text, unitBinary, in.Binary)
		text = strings.ReplaceAll(text, unitConfigDir, strings.TrimSuffix(in.ConfigDir, "/")+"/")
		to := path.Join(in.UnitDir, u.Name)
		fmt.Fprintf(&b, "printf '%%s' %[1]s > %[2]s.new; chmod 644 %[2]s.new; ", q(text), q(to))
	}
	fmt.Fprintf(&b, "mv %[1]s.new %[1]s; replaced=1; ", q(in.Binary))
	for _, u := range units {
		fmt.Fprintf(&b, "mv %[1]s.new %[1]s; ", q(path.Join(in.UnitDir, u.Name)))
	}
	// Only root may reload systemd; a user who could write every path itself (its own dirs, no
	// sudo) is told to.
	fmt.Fprintf(&b, `if [ -d /run/systemd/system ]; then if [ "$(id -u)" -eq 0 ]; then systemctl daemon-reload; `+
		`else echo %s >&2; fi; fi; `,
		q("zero502 host install: systemd was not reloaded (this user is not root): if "+in.UnitDir+" is a directory systemd reads, run systemctl daemon-reload as root"))
	b.WriteString(`printf '%s\n' "$v"`)
	return in.asRoot(b.String()), nil
}

// units are the systemd units the script writes: Units' *.service, then the watchdog's when
// WatchdogInterval is set.
func (in Install) units() ([]watchdog.Unit, error) {
	names, err := fs.Glob(in.Units, "*.service")
	if err != nil {
		return nil, fmt.Errorf("install: listing the systemd units: %w", err)
	}
	var units []watchdog.Unit
	for _, name := range names {
		data, err := fs.ReadFile(in.Units, name)
		if err != nil {
			return nil, fmt.Errorf("install: reading the systemd unit %s: %w", name, err)
		}
		units = append(units, watchdog.Unit{Name: name, Text: string(data)})
	}
	if in.WatchdogInterval != 0 {
		wd, err := watchdog.Units(in.WatchdogInterval)
		if err != nil {
			return nil, fmt.Errorf("install: the watchdog's units: %w", err)
		}
		units = append(units, wd...)
	}
	return units, nil
}

// asRoot wraps script, the install itself, so that a user other than root who cannot write
// every path it writes runs it through sudo -n, with the uid and gid a state dir it makes is
// given to ($1 and $2); root, or a user who can, runs it as it is. What needs root is found
// before anything is read or written: the directory the binary goes to, UnitDir, and, for a
// dir still to be made, the nearest one above it that exists must be writable.
func (in Install) asRoot(script string) string {
	q := ssh.ShellQuote
	var b strings.Builder
	fmt.Fprintf(&b, "set -e; install=%s; u=$(id -u); need=; ", q(script))
	fmt.Fprintf(&b, `writable() { d=$1; while [ ! -e "$d" ]; do d=$(dirname "$d"); done; [ -w "$d" ]; }; `+
		`if [ "$u" -ne 0 ]; then `+
		`for p in %[1]s %[2]s; do writable "$p" || need="$need $p"; done; `+
		`for p in %[3]s %[4]s; do [ -e "$p" ] || writable "$p" || need="$need $p"; done; fi; `,
		q(path.Dir(in.Binary)), q(path.Clean(in.UnitDir)), q(path.Clean(in.ConfigDir)), q(path.Clean(in.StateDir)))
	fmt.Fprintf(&b, `if [ -n "$need" ]; then who=$(id -un 2>/dev/null) || who="uid $u"; `+
		`what="zero502 host install: $who needs root or passwordless sudo for writing$need"; `+
		`if ! command -v sudo >/dev/null 2>&1; then `+
		`echo "$what, and sudo is not installed: install as root (--ssh root@HOST), or install sudo and grant $who passwordless sudo; nothing was changed" >&2; exit %[1]d; fi; `+
		`if ! e=$(sudo -n sh -c : </dev/null 2>&1); then `+
		`echo "$what, and sudo -n refused ($e): install as root (--ssh root@HOST), or grant $who passwordless sudo (NOPASSWD in sudoers); nothing was changed" >&2; exit %[1]d; fi; `+
		`exec sudo -n sh -c "$install" zero502-install "$u" "$(id -g)"; fi; `+
		`exec sh -c "$install" zero502-install`, InstallKept)
	return b.String()
}
