package edge

import (
	"os"
	"testing"

	"github.com/zero502/zero502/internal/testrig/testmain"
)

// The tests run twice where the event loops exist: through them, then every connection through
// the goroutine path (testGoroutinesOnly), so both engines answer every case in one go test.
func TestMain(m *testing.M) {
	os.Exit(testmain.Run(m, testmain.BothEngines(EventLoopsAvailable, "ZERO502_TEST_EDGE_ENGINE=goroutines")))
}
