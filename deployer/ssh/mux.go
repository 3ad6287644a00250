package ssh

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"

	"github.com/zero502/zero502/infra/trust"
)

// Mux is one deploy's (or status's) ssh connections, reused: the first session to a host
// starts an OpenSSH control master on a socket in a directory only this user can enter, and every
// later session to that host (the looks of preflight and re-verify, the step, the fleet lock's
// hold) runs over it instead of a new TCP connection, key exchange and login. Each session is
// still its own channel: closing its stdin or killing its client ends it on the host as before.
// close ends every master and removes the directory; ZERO502_SSH_OPTS="-o ControlMaster=no"
// turns reuse off (ssh keeps the first value of an option).
type Mux struct {
	once sync.Once
	dir  string // "" when it could not be made: no reuse
	mu   sync.Mutex
	used map[string]string // ControlPath → ssh destination args, for close
	bin  string
}

// maxSocketPath is the longest path a control socket may have (sun_path holds 108 bytes on
// Linux, 104 on the BSDs; ssh adds a suffix while it binds).
const maxSocketPath = 90

// ControlPersist keeps an idle master through the pause between batches, and no longer.
const controlPersist = "60s"

// NewMux returns a Mux whose masters are ended with the ssh client sshBin ("" ssh).
func NewMux(sshBin string) *Mux { return &Mux{bin: sshBin} }

// Dir is the directory of the control sockets ("" before the first session, or when it could
// not be made).
func (m *Mux) Dir() string { return m.dir }

// Options are the ssh options that put a session to target on its host's master.
func (m *Mux) Options(target string) []string {
	m.once.Do(func() {
		// 0700; a socket's path has ~100 bytes (sun_path), so a long $TMPDIR (a sandbox's) falls
		// back to /tmp, and without a short enough directory there is no reuse. Nor under a
		// $TMPDIR another user may change (infra/trust): one who renamed the directory away and
		// put a master of their own at a socket's name would be handed the sessions to that host
		// (their config stream, its secrets), and ssh's master takes a root client from any user.
		for _, parent := range []string{os.TempDir(), "/tmp"} {
			if len(parent)+len("/zero502-ssh-1234567890/")+16 > maxSocketPath || trust.Check(parent, os.Getuid()) != nil {
				continue
			}
			if dir, err := os.MkdirTemp(parent, "zero502-ssh-"); err == nil {
				m.dir = dir
				return
			}
		}
	})
	if m.dir == "" {
		return nil
	}
	sum := sha256.Sum256([]byte(target))
	path := filepath.Join(m.dir, hex.EncodeToString(sum[:8])) // short: a socket path has ~100 bytes
	m.mu.Lock()
	if m.used == nil {
		m.used = map[string]string{}
	}
	m.used[path] = target
	m.mu.Unlock()
	return []string{"-o", "ControlMaster=auto", "-o", "ControlPath=" + path, "-o", "ControlPersist=" + controlPersist}
}

// Close asks every master to exit (`ssh -O exit`) and removes the directory.
func (m *Mux) Close() {
	if m == nil || m.dir == "" {
		return
	}
	m.mu.Lock()
	used := m.used
	m.used = nil
	m.mu.Unlock()
	var wg sync.WaitGroup
	for path, target := range used {
		if _, err := os.Stat(path); err != nil {
			continue // no master was started there
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if cmd, err := Cmd(m.bin, target, []string{"-o", "ControlPath=" + path, "-O", "exit"}); err == nil {
				_ = cmd.Run()
			}
		}()
	}
	wg.Wait()
	os.RemoveAll(m.dir)
}
