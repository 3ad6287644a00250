package spec

import (
	"os/user"
	"path/filepath"
	"testing"
)

// The spec records whom each service runs as: services[].user when set, else, for a process
// service, the user who published it (so a heal by a root watchdog starts it as that user); a
// docker service without a user keeps its image's. What Publish resolved does not make a
// republished spec differ; a changed services[].user does.
func TestThePublishedSpecRecordsWhomEachServiceRunsAs(t *testing.T) {
	me, err := user.Current()
	if err != nil {
		t.Fatal(err)
	}
	s := Spec{Host: "host-a", Version: "v1", Services: []Service{
		{Name: "web", Version: "v1", Command: []string{"app"}},
		{Name: "worker", Version: "v1", Command: []string{"work"}, User: "nobody"},
		{Name: "db", Version: "v1", Image: "postgres:17"},
	}}
	path := filepath.Join(t.TempDir(), fileName)
	if err := Publish(path, s); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"web": me.Username, "worker": "nobody", "db": ""} {
		if svc, _ := got.Service(name); svc.RunAs != want {
			t.Errorf("%s: run_as %q, want %q", name, svc.RunAs, want)
		}
	}
	if !Same(got, s) {
		t.Error("the published spec differs from what was rendered only by run_as, and Same says it is not the same")
	}
	changed := s
	changed.Services = append([]Service(nil), s.Services...)
	changed.Services[0].User = "nobody"
	if Same(got, changed) {
		t.Error("services[].user changed and Same says the spec is the same: the change would never roll out")
	}
}
