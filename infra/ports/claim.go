package ports

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// A port handed out is claimed until its process ends, so that nobody is handed it again while
// the service it was picked for is not yet listening, or is restarting (a stop-first deploy frees
// its port on purpose): not by this process (tests pick ports in parallel) and not by another
// one on the machine (a second test binary, a demo). Inside the process the claim is a set;
// across processes it is a file named for the port in a directory of this user's, holding the
// claimant's pid: a claim whose process is gone, or older than claimTTL, is taken over.

// claimTTL is how long another process's claim is honoured while its process still runs (a pid
// can be reused).
const claimTTL = time.Hour

var claims = struct {
	sync.Mutex
	mine map[int]bool
	dir  string // "" until made; "-" when it cannot be made (claims are then this process's only)
}{mine: map[int]bool{}}

// claim takes port p for this process, or reports false when this process or another live one
// holds it.
func claim(p int) bool {
	claims.Lock()
	defer claims.Unlock()
	if claims.mine[p] {
		return false
	}
	if dir := claimDir(); dir != "-" && !claimFile(filepath.Join(dir, strconv.Itoa(p))) {
		return false
	}
	claims.mine[p] = true
	return true
}

// release gives back a port claimed but not handed out (a block that could not be completed).
func release(p int) {
	claims.Lock()
	defer claims.Unlock()
	delete(claims.mine, p)
	if claims.dir != "" && claims.dir != "-" {
		_ = os.Remove(filepath.Join(claims.dir, strconv.Itoa(p)))
	}
}

// claimDir is the directory of claim files, made 0700 for this user; "-" when it cannot be made
// or is not this user's alone. Called with claims held.
func claimDir() string {
	if claims.dir != "" {
		return claims.dir
	}
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("zero502-ports-%d", os.Getuid()))
	claims.dir = "-"
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return claims.dir
	}
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm()&0o077 != 0 || !ownedByMe(fi) {
		return claims.dir
	}
	claims.dir = dir
	return dir
}

// claimFile creates path holding this pid, taking over a claim whose process is gone or that is
// older than claimTTL; false when a live process holds it. A claim file appears whole (link(2)
// of a file already written: no reader ever sees it empty and takes it for stale), and only
// one claimant at a time takes over a stale one (exclusively), judging it again first: no
// claimant removes a fresh claim another made after it judged the old one stale.
func claimFile(path string) bool {
	if created, err := createClaim(path); created || !errors.Is(err, fs.ErrExist) {
		return created
	}
	if !stale(path) {
		return false
	}
	won := false
	exclusively(filepath.Dir(path), func() {
		if stale(path) {
			_ = os.Remove(path)
			won, _ = createClaim(path)
		}
	})
	return won
}

// createClaim creates path holding this pid, whole or not at all (fs.ErrExist when it exists).
func createClaim(path string) (bool, error) {
	tmp := fmt.Sprintf("%s.new-%d-%d", path, os.Getpid(), time.Now().UnixNano())
	if err := os.WriteFile(tmp, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		return false, err
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, path); err != nil {
		return false, err
	}
	return true, nil
}

// stale reports whether the claim at path may be taken over: unreadable, from a process that is
// gone, or older than claimTTL.
func stale(path string) bool {
	fi, err := os.Stat(path)
	if err != nil {
		return true
	}
	if time.Since(fi.ModTime()) > claimTTL {
		return true
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return true
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid == os.Getpid() {
		return err != nil
	}
	return !alive(pid)
}
