package ports

import (
	"net"
	"strings"
	"testing"
)

func TestFreePortsAreBelowTheEphemeralRangeDistinctAndBindable(t *testing.T) {
	top := ephemeralLow()
	for range 20 {
		ps, err := Free(5)
		if err != nil {
			t.Fatal(err)
		}
		seen := map[int]bool{}
		for _, p := range ps {
			if p < floor || p >= top || seen[p] {
				t.Fatalf("Free(5) = %v: want 5 distinct ports in [%d, %d)", ps, floor, top)
			}
			seen[p] = true
		}
		if span := ps[len(ps)-1] - ps[0]; span > 1000 {
			t.Errorf("Free(5) = %v spans %d ports; want them close together", ps, span)
		}
		var held []net.Listener
		for _, p := range ps {
			ln, err := listen(p)
			if err != nil {
				t.Fatalf("port %d from Free is not free: %v", p, err)
			}
			held = append(held, ln)
		}
		closeAll(held)
	}
}

// A port in use is never handed out: hold every port of a block and Free must step past it.
func TestFreeSkipsPortsInUse(t *testing.T) {
	ps, err := Free(3)
	if err != nil {
		t.Fatal(err)
	}
	var held []net.Listener
	for _, p := range ps {
		ln, err := listen(p)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, ln)
	}
	defer closeAll(held)
	h, out := listenFrom(ps[0], ephemeralLow(), 2)
	closeAll(h)
	for _, p := range out {
		for _, q := range ps {
			if p == q {
				t.Fatalf("listenFrom(%d) handed out %d, which is in use", ps[0], p)
			}
		}
	}
	if len(out) != 2 {
		t.Fatalf("listenFrom found %v, want 2 ports", out)
	}
}

func TestFreeAtOffsets(t *testing.T) {
	hosts, err := Free(3)
	if err != nil {
		t.Fatal(err)
	}
	offsets := []int{0, hosts[1] - hosts[0], hosts[2] - hosts[0]}
	base, err := FreeAtOffsets(offsets, hosts)
	if err != nil {
		t.Fatal(err)
	}
	for _, off := range offsets {
		p := base + off
		if p < floor || p >= ephemeralLow() {
			t.Fatalf("base %d + offset %d = %d: outside [%d, %d)", base, off, p, floor, ephemeralLow())
		}
		for _, h := range hosts {
			if p == h {
				t.Fatalf("base %d + offset %d = %d: one of the ports to avoid %v", base, off, p, hosts)
			}
		}
		ln, err := listen(p)
		if err != nil {
			t.Fatalf("port %d is not free: %v", p, err)
		}
		ln.Close()
	}
}

func TestBadRequestsNameTheRule(t *testing.T) {
	if _, err := Free(0); err == nil || !strings.Contains(err.Error(), "want 1 to") {
		t.Errorf("Free(0): %v, want the rule named", err)
	}
	if _, err := FreeAtOffsets([]int{0, -1}, nil); err == nil || !strings.Contains(err.Error(), "negative") {
		t.Errorf("negative offset: %v, want it named", err)
	}
	if _, err := FreeAtOffsets([]int{0, 60000}, nil); err == nil || !strings.Contains(err.Error(), "span") {
		t.Errorf("offsets wider than the range: %v, want it named", err)
	}
}
