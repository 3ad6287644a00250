//go:build unix

package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/zero502/zero502/internal/testrig/syncbuffer"
)

// The long-running commands take their context from infra/stopsignal, so SIGTERM means the same
// thing to each: drain (health refuses while traffic is still served), then exit 0. These tests
// run the real binary and watch it over real sockets; each wait polls with a deadline.

// daemon is a running `zero502 ARGS…`.
type daemon struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdout *syncbuffer.Buffer
	stderr *syncbuffer.Buffer
	exited chan struct{}
	err    error // Wait's, once exited is closed
}

func startDaemon(t *testing.T, bin string, args ...string) *daemon {
	t.Helper()
	d := &daemon{t: t, cmd: exec.Command(bin, args...), stdout: &syncbuffer.Buffer{}, stderr: &syncbuffer.Buffer{},
		exited: make(chan struct{})}
	d.cmd.Stdout, d.cmd.Stderr = d.stdout, d.stderr
	if err := d.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { d.err = d.cmd.Wait(); close(d.exited) }()
	t.Cleanup(func() {
		select {
		case <-d.exited:
		default:
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
	})
	return d
}

// until polls cond every 20ms until it holds, failing the test after within.
func (d *daemon) until(what string, within time.Duration, cond func() bool) {
	d.t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		select {
		case <-d.exited:
			d.t.Fatalf("zero502 %s exited (%v) before %s\nstderr:\n%s", d.cmd.Args[1], d.err, what, d.stderr)
		default:
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("zero502 %s: not %s within %s\nstderr:\n%s", d.cmd.Args[1], what, within, d.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (d *daemon) sigterm() {
	d.t.Helper()
	if err := d.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		d.t.Fatal(err)
	}
}

// exitsZero waits for the exit and requires status 0.
func (d *daemon) exitsZero(within time.Duration) {
	d.t.Helper()
	select {
	case <-d.exited:
	case <-time.After(within):
		d.t.Fatalf("zero502 %s still runs %s after SIGTERM\nstderr:\n%s", d.cmd.Args[1], within, d.stderr)
	}
	if d.err != nil {
		d.t.Fatalf("zero502 %s after SIGTERM: %v, want exit 0\nstderr:\n%s", d.cmd.Args[1], d.err, d.stderr)
	}
}

// status GETs url on a fresh connection: the status code, or 0 when nothing answers.
func status(url string) (int, string) {
	c := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return 0, ""
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// drainsThenExitsZero is the handshake seen from outside: healthy; SIGTERM; health answers 503
// while serve still answers 200; then exit 0.
func drainsThenExitsZero(t *testing.T, d *daemon, health string, serve func() bool) {
	t.Helper()
	d.until("healthy", 30*time.Second, func() bool { code, _ := status(health); return code == http.StatusOK })
	if !serve() {
		t.Fatal("not serving before SIGTERM")
	}
	d.sigterm()
	d.until("draining (health 503)", 10*time.Second, func() bool { code, _ := status(health); return code == http.StatusServiceUnavailable })
	if !serve() {
		t.Fatalf("health answers 503 but traffic is no longer served: the drain stopped serving early\nstderr:\n%s", d.stderr)
	}
	d.exitsZero(30 * time.Second)
}

// watchdogConfig is one host of the process runtime with its state in a temp dir and nothing
// published: every tick finds nothing to watch.
func watchdogConfig(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "zero502.yaml")
	yaml := fmt.Sprintf(`
rollout: {runtime: process}
watchdog: {interval: 200ms, state_dir: %[1]s}
services:
  - {name: worker, command: [sleep, "60"]}
hosts:
  - {name: h1, state_dir: %[1]s}
`, dir)
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestLongRunningCommandsDrainThenExitZeroOnSIGTERM(t *testing.T) {
	bin := buildZero502(t)
	t.Run("app", func(t *testing.T) {
		addr := freeAddr(t)
		_, port, _ := net.SplitHostPort(addr)
		d := startDaemon(t, bin, "app", "--version", "v7", "--port", port, "--drain", "2s", "--shutdown", "1s")
		drainsThenExitsZero(t, d, "http://"+addr+"/health", func() bool {
			code, body := status("http://" + addr + "/")
			return code == http.StatusOK && strings.Contains(body, "version v7")
		})
	})
	t.Run("lb", func(t *testing.T) {
		path, admin := localConfig(t)
		d := startDaemon(t, bin, "lb", "--config", path, "--drain", "2s")
		// The LB serves its admin API for the whole drain; its backends (the config's hosts) are
		// not running, which changes nothing about its own handshake.
		drainsThenExitsZero(t, d, "http://"+admin+"/admin/health", func() bool {
			code, _ := status("http://" + admin + "/admin/backends")
			return code == http.StatusOK
		})
	})
	// Commands without a drain window stop on SIGTERM through the same helper, and exit 0.
	t.Run("edge origin", func(t *testing.T) {
		listen := freeAddr(t)
		d := startDaemon(t, bin, "edge", "origin", "--listen", listen, "--to", freeAddr(t))
		d.until("accepting", 30*time.Second, func() bool {
			c, err := net.DialTimeout("tcp", listen, time.Second)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
		d.sigterm()
		d.exitsZero(30 * time.Second)
	})
	t.Run("watchdog --loop", func(t *testing.T) {
		d := startDaemon(t, bin, "watchdog", "--config", watchdogConfig(t), "--host", "h1", "--loop")
		d.until("ticking twice", 30*time.Second, func() bool { return strings.Count(d.stdout.String(), "h1") >= 2 })
		d.sigterm()
		d.exitsZero(30 * time.Second)
		if strings.Contains(d.stderr.String(), "tick failed") {
			t.Errorf("a tick failed:\n%s", d.stderr)
		}
	})
}
