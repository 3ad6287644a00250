package mesh

import (
	"net/http"
	"strings"
	"testing"
)

// A bulletin above the control listeners' body limit is refused 413 before it is read.
func TestOversizedBulletinIsRefused413(t *testing.T) {
	nodes := startMesh(t, "a", "b")
	resp, err := http.Post("http://"+nodes["a"].Addr()+"/mesh/bulletin", "application/json", strings.NewReader(strings.Repeat(" ", 2<<20)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 2 MiB bulletin answered %d, want 413", resp.StatusCode)
	}
}
