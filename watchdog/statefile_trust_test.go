package watchdog_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/spec"
	"github.com/zero502/zero502/watchdog"
)

// watchdog.json is read by the spec's rule (trust.Open): a state file another user may write,
// saying web has failed 3 times for an hour, made the very first failed check heal web
// (heal_after 4); it is refused, and every streak starts from zero.
func TestAStateFileAnotherUserCanWriteIsNotBelieved(t *testing.T) {
	d := newDrainingHost(t, "interval: 60s, heal_after: 4", "window: 15s, shutdown: 10s, stop_grace: 30s")
	pub, err := spec.Read(spec.Path(d.state))
	if err != nil {
		t.Fatal(err)
	}
	now := d.clk.Now().UTC()
	forged := fmt.Sprintf(`{"host":"h1","updated_at":%q,"spec_published_at":%q,"services":{"web":{"consecutive_failures":3,`+
		`"last_check":%q,"failing_since":%q,"heals_total":0}}}`,
		now.Add(-time.Minute).Format(time.RFC3339Nano), pub.PublishedAt.Format(time.RFC3339Nano),
		now.Add(-time.Minute).Format(time.RFC3339Nano), now.Add(-time.Hour).Format(time.RFC3339Nano))
	path := filepath.Join(d.state, watchdog.StateFile)
	if err := os.WriteFile(path, []byte(forged), 0o666); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(path, 0o666)
	if os.Getuid() == 0 {
		_ = os.Chown(path, 65534, 65534)
	}
	if v := d.tick(t); v.Healed {
		t.Fatalf("first failing check healed web on a state file mode 0666 owned by uid 65534 (streak %d, reason %q); "+
			"want the file refused and the streak started from zero", v.Streak, v.Reason)
	}
}
