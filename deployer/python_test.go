package deployer

import "testing"

// TestPythonHTTPServer deploys python3 -m http.server, a server that knows nothing of the
// handshake, drained at the balancer in each way the deployer offers. Its cases run beside each
// other but before the package's parallel tests start: python answers slowly on a loaded 2-core
// machine (a fork per CGI request), so they share the machine only with one another.
func TestPythonHTTPServer(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(*testing.T)
	}{
		{"StopFirstDrainedAtTheBalancer", pythonStopFirstDrainedAtTheBalancer},
		{"StartFirst", pythonStartFirst},
		{"SingleHostStartFirstLosesNothing", pythonSingleHostStartFirstLosesNothing},
		{"StartFirstNeverHealthyKeepsTheOldInRotation", pythonStartFirstNeverHealthyKeepsTheOldInRotation},
		{"BehindALBStartFirstDrainedAtTheBalancer", pythonBehindALBStartFirstDrainedAtTheBalancer},
		{"StopOneHostUnderLoadDrainsAtTheBalancerFirst", pythonStopOneHostUnderLoadDrainsAtTheBalancerFirst},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.run(t)
		})
	}
}
