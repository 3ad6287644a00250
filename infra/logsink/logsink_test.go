package logsink

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/poll"
)

// file is a real log file that counts the writes it gets.
type file struct {
	t      *testing.T
	f      *os.File
	mu     sync.Mutex
	writes int
	fail   error // returned by the next write, once
}

func newFile(t *testing.T) *file {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "service.log"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return &file{t: t, f: f}
}

func (f *file) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.writes++
	if err := f.fail; err != nil {
		f.fail = nil
		return 0, err
	}
	return f.f.Write(p)
}

func (f *file) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.writes
}

func (f *file) text() string {
	f.t.Helper()
	b, err := os.ReadFile(f.f.Name())
	if err != nil {
		f.t.Fatal(err)
	}
	return string(b)
}

func TestLinesWaitForTheDelayAndLeaveInOneWrite(t *testing.T) {
	out := newFile(t)
	clk := clock.NewFake(time.Unix(0, 0))
	s := New(out, 100*time.Millisecond, clk)
	for i := range 50 {
		if _, err := fmt.Fprintf(s, "line %d\n", i); err != nil {
			t.Fatal(err)
		}
	}
	if n := out.count(); n != 0 {
		t.Fatalf("%d writes before the delay; want 0", n)
	}
	clk.Advance(99 * time.Millisecond)
	if n := out.count(); n != 0 {
		t.Fatalf("%d writes 1 ms before the delay; want 0", n)
	}
	clk.Advance(time.Millisecond)
	poll.Until(t, 5*time.Second, "the batch is written once the delay has passed", func() bool { return out.count() == 1 })
	lines := strings.Split(strings.TrimSuffix(out.text(), "\n"), "\n")
	if len(lines) != 50 || lines[0] != "line 0" || lines[49] != "line 49" {
		t.Fatalf("file holds %d lines (%q … %q); want line 0 … line 49 in order", len(lines), lines[0], lines[len(lines)-1])
	}

	// The next line starts a new batch with a delay of its own.
	if _, err := s.Write([]byte("line 50\n")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(100 * time.Millisecond)
	poll.Until(t, 5*time.Second, "the second batch is written after its own delay", func() bool { return out.count() == 2 })
}

func TestAFullBatchIsWrittenAtOnce(t *testing.T) {
	out := newFile(t)
	s := New(out, time.Hour, clock.NewFake(time.Unix(0, 0)))
	line := append(bytes.Repeat([]byte("x"), 1023), '\n')
	for range maxBatch/len(line) - 1 {
		if _, err := s.Write(line); err != nil {
			t.Fatal(err)
		}
	}
	if n := out.count(); n != 0 {
		t.Fatalf("%d writes below 64 KiB; want 0", n)
	}
	if _, err := s.Write(line); err != nil {
		t.Fatal(err)
	}
	if n, size := out.count(), len(out.text()); n != 1 || size != maxBatch {
		t.Fatalf("at 64 KiB: %d writes, %d bytes in the file; want 1 write of %d", n, size, maxBatch)
	}
}

func TestAWarningIsWrittenWithTheLinesBeforeIt(t *testing.T) {
	out := newFile(t)
	s := New(out, time.Hour, clock.NewFake(time.Unix(0, 0)))
	log := slog.New(s.Handler(slog.NewJSONHandler(s, nil), slog.LevelWarn)).With("service", "edge")
	log.Info("edge connection closed", "up_bytes", 10)
	log.Info("edge connection closed", "up_bytes", 20)
	if n := out.count(); n != 0 {
		t.Fatalf("%d writes after two info lines; want 0", n)
	}
	log.Warn("edge: upstream unreachable; ejected, trying the next")
	text := out.text()
	if n := out.count(); n != 1 || strings.Count(text, "\n") != 3 {
		t.Fatalf("after the warning: %d writes, file %q; want the 3 lines in 1 write", n, text)
	}
	if !strings.Contains(text, `"service":"edge"`) || strings.Index(text, "up_bytes\":20") > strings.Index(text, "unreachable") {
		t.Fatalf("file %q: want every line with the logger's attributes, in the order logged", text)
	}
	log.WithGroup("upstream").Error("gone", "addr", "127.0.0.1:1")
	if n := out.count(); n != 2 {
		t.Fatalf("after an error through a group: %d writes; want 2", n)
	}
}

func TestCloseWritesWhatWaitsAndLaterLinesPassStraightThrough(t *testing.T) {
	out := newFile(t)
	s := New(out, time.Hour, clock.NewFake(time.Unix(0, 0)))
	_, _ = s.Write([]byte("before close\n"))
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if got := out.text(); got != "before close\n" {
		t.Fatalf("after Close the file holds %q; want the waiting line", got)
	}
	_, _ = s.Write([]byte("after close\n"))
	if got := out.text(); got != "before close\nafter close\n" {
		t.Fatalf("a line written after Close: file %q; want it written at once", got)
	}
}

func TestAFailedBatchIsReportedByTheNextCall(t *testing.T) {
	out := newFile(t)
	s := New(out, time.Hour, clock.NewFake(time.Unix(0, 0)))
	disk := errors.New("no space left on device")
	out.fail = disk
	_, _ = s.Write([]byte("lost\n"))
	if err := s.Flush(); !errors.Is(err, disk) {
		t.Fatalf("Flush of a batch the file refused: %v; want %v", err, disk)
	}
	_, _ = s.Write([]byte("kept\n"))
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush after the file recovered: %v", err)
	}
	if got := out.text(); got != "kept\n" {
		t.Fatalf("file %q; want only the line written after the failure", got)
	}
}

// A batch the delay wrote and the file refused is reported too, by the next Write, as Write's
// doc says: the timer has no one to tell.
func TestABatchTheDelayWroteAndTheFileRefusedIsReportedByTheNextWrite(t *testing.T) {
	out := newFile(t)
	clk := clock.NewFake(time.Unix(0, 0))
	s := New(out, 100*time.Millisecond, clk)
	disk := errors.New("no space left on device")
	out.fail = disk
	_, _ = s.Write([]byte("lost\n"))
	clk.Advance(100 * time.Millisecond)
	poll.Until(t, 5*time.Second, "the batch is written once the delay has passed", func() bool { return out.count() == 1 })
	if _, err := s.Write([]byte("next\n")); !errors.Is(err, disk) {
		t.Fatalf("Write after a batch the file refused: %v; want %v", err, disk)
	}
	if err := s.Flush(); err != nil {
		t.Fatalf("Flush after the file recovered: %v; want the error reported once", err)
	}
}

func TestConcurrentLoggersKeepWholeLines(t *testing.T) {
	out := newFile(t)
	s := New(out, time.Millisecond, nil)
	log := slog.New(s.Handler(slog.NewJSONHandler(s, nil), slog.LevelWarn))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 500 {
				log.Info("edge connection closed", "loop", g, "n", i)
			}
		})
	}
	wg.Wait()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(out.text(), "\n"), "\n")
	if len(lines) != 4000 {
		t.Fatalf("%d lines; want 4000", len(lines))
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "{") || !strings.HasSuffix(l, "}") {
			t.Fatalf("a torn line: %q", l)
		}
	}
	if n := out.count(); n >= 4000 {
		t.Fatalf("%d writes for 4000 lines; want them batched", n)
	}
}
