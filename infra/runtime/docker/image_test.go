package docker

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCheckStaticRefusesADynamicBinary(t *testing.T) {
	// The test binary itself is built with the default cgo settings; /bin/sh surely is dynamic.
	if _, err := os.Stat("/bin/sh"); err != nil {
		t.Skip("no /bin/sh")
	}
	err := CheckStatic("/bin/sh")
	if err == nil || !strings.Contains(err.Error(), "CGO_ENABLED=0") {
		t.Fatalf("CheckStatic(/bin/sh) = %v, want a refusal naming CGO_ENABLED=0", err)
	}
	notELF := filepath.Join(t.TempDir(), "x")
	os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755)
	if err := CheckStatic(notELF); err == nil {
		t.Fatal("CheckStatic accepted a shell script")
	}
}

func TestContainerNameIsSafeAndUnique(t *testing.T) {
	a, b := containerName("host-a", "web", "v1+build/7"), containerName("host-a", "web", "v1+build/7")
	if a == b {
		t.Fatalf("two names are equal: %s", a)
	}
	if !strings.HasPrefix(a, "zero502-host-a-web-v1_build_7-") || nameUnsafe.MatchString(a) {
		t.Fatalf("name %q: want zero502-host-a-web-v1_build_7-<hex> with only [a-zA-Z0-9_.-]", a)
	}
}

func TestBindIPIsTheAddressIPOrEveryInterface(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8000": "127.0.0.1", "10.0.0.5:80": "10.0.0.5", "[::1]:80": "::1",
		"app-1.internal:8000": "", "": "",
	} {
		got := bindIP(addr)
		s := "" // every interface: the zero Addr, which the engine gets as ""
		if got.IsValid() {
			s = got.String()
		}
		if s != want {
			t.Errorf("bindIP(%q) = %v, want %q", addr, got, want)
		}
	}
}
