package lb

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
)

// The admin state an upgrade hands over, written by the old process and read by the new one,
// gives the new LB what the admin API changed: backends added and removed, drains and their
// owner, weights, and the maintenance switch with its message (cmd/zero502 tests the upgrade
// itself, with real processes).
func TestTheHandedOverAdminStateIsWhatTheAdminAPIChanged(t *testing.T) {
	configured := []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9003"}
	old, err := New(LabSettings("127.0.0.1:0", configured))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := old.AddBackend("127.0.0.1:9004"); err != nil {
		t.Fatal(err)
	}
	must := func(_ BackendStatus, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(old.DrainBackend("127.0.0.1:9001", "deploy"))
	must(old.SetBackendWeight("127.0.0.1:9002", 7))
	must(old.DrainBackend("127.0.0.1:9003", adminapi.DrainedByAdmin))
	if err := old.RemoveBackend("127.0.0.1:9003"); err != nil {
		t.Fatal(err)
	}
	old.SetMaintenance(&adminapi.MaintenanceChange{Message: "back at noon", RetryAfter: adminapi.Duration(30 * time.Second)})

	path := filepath.Join(t.TempDir(), "lb.pid.admin.json")
	if err := old.PrepareHandoff(path); err != nil {
		t.Fatal(err)
	}
	h, ok, err := ReadHandoff(path, os.Getpid())
	if !ok || err != nil {
		t.Fatalf("ReadHandoff: ok %v, %v", ok, err)
	}
	now, err := New(LabSettings("127.0.0.1:0", configured), WithInherited(&h))
	if err != nil {
		t.Fatal(err)
	}
	var addrs []string
	for _, b := range now.Backends() {
		addrs = append(addrs, b.Address)
	}
	if want := []string{"127.0.0.1:9001", "127.0.0.1:9002", "127.0.0.1:9004"}; !slices.Equal(addrs, want) {
		t.Errorf("backends %v, want %v (9003 removed, 9004 added)", addrs, want)
	}
	if st, _ := now.BackendStatus("127.0.0.1:9001"); !st.AdminDrained || st.DrainedBy != "deploy" {
		t.Errorf("9001: %+v, want drained by deploy", st)
	}
	if st, _ := now.BackendStatus("127.0.0.1:9002"); st.Weight != 7 {
		t.Errorf("9002: weight %d, want 7", st.Weight)
	}
	if m := now.Maintenance(); !m.On || m.Message != "back at noon" || time.Duration(m.RetryAfter) != 30*time.Second {
		t.Errorf("maintenance %+v, want on with its message and retry_after", m)
	}
}
