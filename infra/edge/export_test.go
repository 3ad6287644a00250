package edge

import "os"

// testGoroutinesOnly says the tests run every connection through the goroutine path:
// ZERO502_TEST_EDGE_ENGINE=goroutines (TestMain runs the tests once with the event loops, then
// again that way).
func testGoroutinesOnly() bool { return os.Getenv("ZERO502_TEST_EDGE_ENGINE") == "goroutines" }

// ForTests sets f up as the tests want it: on the goroutine path under
// ZERO502_TEST_EDGE_ENGINE=goroutines. The package's external tests call it on every Forwarder
// they build; the internal ones go through startForwarder or set the field.
func ForTests(f *Forwarder) *Forwarder {
	f.goroutines = testGoroutinesOnly()
	return f
}
