package docker

import (
	"context"
	"fmt"
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

// A port is published on the IP the address names, a name resolved on the host, and never on
// every interface unless the address says so (Docker's publishing bypasses INPUT rules).
func TestBindIPIsTheAddressesIPNeverEveryInterfaceUnasked(t *testing.T) {
	ctx := context.Background()
	for addr, want := range map[string]string{
		"127.0.0.1:8000": "127.0.0.1", "10.0.0.5:80": "10.0.0.5", "[::1]:80": "::1",
		"localhost:8000": "127.0.0.1", // a name: resolved (/etc/hosts), not every interface
		"0.0.0.0:80":     "0.0.0.0",   // every interface, because the config asks
	} {
		got, err := bindIP(ctx, addr)
		if err != nil || got.String() != want {
			t.Errorf("bindIP(%q) = %v, %v; want %s", addr, got, err, want)
		}
	}
	for _, addr := range []string{"no-such-host.invalid:80", ":80", ""} {
		got, err := bindIP(ctx, addr)
		if err == nil || !strings.Contains(err.Error(), "hosts[].address") || !strings.Contains(err.Error(), fmt.Sprintf("%q", addr)) {
			t.Errorf("bindIP(%q) = %v, %v; want an error naming the address and hosts[].address", addr, got, err)
		}
	}
}
