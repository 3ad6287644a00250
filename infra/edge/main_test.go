package edge

import (
	"os"
	"testing"

	"github.com/zero502/zero502/internal/testrig/testmain"
)

// The tests run twice where the event loops exist: through them, then every connection through
// the goroutine path (testGoroutinesOnly), so both engines answer every case in one go test.
func TestMain(m *testing.M) {
	var o testmain.Options
	if EventLoopsAvailable {
		o.Again = []string{"ZERO502_TEST_EDGE_ENGINE=goroutines"}
	}
	os.Exit(testmain.Run(m, o))
}
