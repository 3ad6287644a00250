package main

import "testing"

// Every command that reaches hosts over ssh takes --remote-binary: deploy promote|abort and
// rollback run a host's step as deploy does, and without the flag they ran `zero502` from the
// host's PATH, whatever binary the deploy they decide on was given.
func TestEveryCommandThatReachesSSHHostsTakesRemoteBinary(t *testing.T) {
	root := newRootCmd()
	for _, path := range [][]string{
		{"deploy"}, {"deploy", "promote"}, {"deploy", "abort"}, {"rollback"}, {"status"}, {"stop"}, {"logs"}, {"lock", "status"},
	} {
		cmd, _, err := root.Find(path)
		if err != nil || cmd.Name() != path[len(path)-1] {
			t.Errorf("zero502 %v: not found (%v)", path, err)
			continue
		}
		if cmd.Flags().Lookup("remote-binary") == nil && cmd.InheritedFlags().Lookup("remote-binary") == nil {
			t.Errorf("zero502 %v has no --remote-binary", path)
		}
	}
}
