package watchdog_test

import (
	"testing"

	"github.com/zero502/zero502/watchdog"
)

// zero502 status shows each service's streak from the state file (ReadStreaks). After a deploy
// published a new spec, the failures the last tick counted were the old instances': the tick
// starts them over (TestANewSpecStartsEveryStreakOver), and status must not show the new version
// failing before a tick has checked it.
func TestStatusShowsNoOldFailuresAfterANewSpec(t *testing.T) {
	f := processFixture(t)
	f.kill("web")
	f.kill("worker")
	for i := 1; i <= 3; i++ {
		f.tick()
	}
	got, _, err := watchdog.ReadStreaks(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	if got["web"].Failures != 3 || got["worker"].Failures != 3 {
		t.Fatalf("before the deploy: %+v, want 3 failures each", got)
	}
	f.deploy("v2") // web and worker v2 started and healthy; no tick yet
	got, _, err = watchdog.ReadStreaks(f.dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, svc := range []string{"web", "worker"} {
		if st := got[svc]; st.Failures != 0 || st.LastError != "" {
			t.Errorf("%s after a deploy of v2, before any tick: %+v, want no failures (they were v1's)", svc, st)
		}
	}
}
