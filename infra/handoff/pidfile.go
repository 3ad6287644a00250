package handoff

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/infra/trust"
)

// DefaultPIDFile is where a server called name keeps its pid file unless told otherwise: the
// runtime directory systemd made for the unit ($RUNTIME_DIRECTORY, RuntimeDirectory=zero502),
// else the user's ($XDG_RUNTIME_DIR/zero502), else /run/zero502 for root, else a directory of
// the user's own under the temporary directory (/tmp/zero502-<euid>, which another user could
// create first: ReadPID and writePID refuse a pid file whose directories fail trust.Check).
func DefaultPIDFile(name string, getenv func(string) string) string {
	file := name + ".pid"
	if d := getenv("RUNTIME_DIRECTORY"); d != "" {
		return filepath.Join(strings.Split(d, ":")[0], file)
	}
	if d := getenv("XDG_RUNTIME_DIR"); d != "" {
		return filepath.Join(d, "zero502", file)
	}
	if os.Geteuid() == 0 {
		return filepath.Join("/run/zero502", file)
	}
	return filepath.Join(os.TempDir(), "zero502-"+strconv.Itoa(os.Geteuid()), file)
}

// ReadPID is the pid in the pid file at path. A pid file that another user could have written
// (it or a directory above it fails trust.Check) is refused: its pid would be signalled.
func ReadPID(path string) (int, error) {
	data, err := readTrusted(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, fmt.Errorf("pid file %s does not exist: is the server running, and with this --pid-file? (%w)", path, err)
	case errors.Is(err, trust.ErrRefused):
		return 0, fmt.Errorf("pid file %s is not trusted: %w; or give --pid-file a path in a directory only this user can write", path, err)
	case err != nil:
		return 0, fmt.Errorf("read the pid file %s: %w", path, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pid file %s holds %q, not a process id; remove it and restart the server", path, strings.TrimSpace(string(data)))
	}
	return pid, nil
}

// writePID writes pid to path, atomically: a first process its own, an old process its
// successor's once it accepted it.
func writePID(path string, pid int) error {
	dir := filepath.Dir(path)
	// Made only below a directory trust.Check accepts: nothing inside another user's.
	if err := trust.MkdirAll(dir, 0o700, os.Geteuid()); err != nil {
		if errors.Is(err, trust.ErrRefused) {
			return fmt.Errorf("pid file %s is not trusted: %w; or give --pid-file a path in a directory only this user can write", path, err)
		}
		return fmt.Errorf("create the pid file's directory %s: %w", dir, err)
	}
	if err := trustPIDFile(dir); err != nil {
		return err
	}
	return spec.WriteAtomic(path, []byte(strconv.Itoa(pid)+"\n"))
}

// trustPIDFile is trust.Check of a pid file or its directory, with what to do.
func trustPIDFile(path string) error {
	if err := trust.Check(path, os.Geteuid()); err != nil {
		return fmt.Errorf("pid file %s is not trusted: %w; or give --pid-file a path in a directory only this user can write", path, err)
	}
	return nil
}

// maxRecord is the most readTrusted reads of a pid file or an upgrade record (both a few bytes).
const maxRecord = 64 << 10

// readTrusted is the content of the file at path (up to maxRecord bytes) once trust.Open trusts
// it: a regular file only this user (or root) could have written, through every directory above
// it, judged before it is read. The pid file and the upgrade record may sit in a sticky directory
// such as /tmp, where another user can create either first: what they say would be signalled,
// and their FIFO would block the reader.
func readTrusted(path string) ([]byte, error) {
	f, err := trust.Open(path, os.Geteuid())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, maxRecord))
}
