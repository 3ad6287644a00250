package deployer

import (
	"encoding/json"
	"strings"
	"testing"
)

// Status names each secret and says whether the hosts have the same value, numbering the
// values when they differ; the digests the specs record never reach its output.
func TestStatusSaysWhetherHostsShareASecretButShowsNoDigest(t *testing.T) {
	t.Parallel()
	host := func(name string, secrets map[string]string) HostStatus {
		return HostStatus{Host: name, Services: []serviceStatus{{Service: "web", Secrets: secrets}}}
	}
	st := &FleetStatus{Hosts: []HostStatus{
		host("host-a", map[string]string{"DB_PASSWORD": "d1a9", "API_KEY": "k7"}),
		host("host-b", map[string]string{"DB_PASSWORD": "d2b8", "API_KEY": "k7"}),
		host("host-c", map[string]string{"DB_PASSWORD": "d1a9"}),
	}}
	labelSecrets(st)
	want := map[string]map[string]string{
		"host-a": {"DB_PASSWORD": "value 1 of 2: differs between hosts", "API_KEY": SecretSame},
		"host-b": {"DB_PASSWORD": "value 2 of 2: differs between hosts", "API_KEY": SecretSame},
		"host-c": {"DB_PASSWORD": "value 1 of 2: differs between hosts"},
	}
	for _, h := range st.Hosts {
		for name, label := range want[h.Host] {
			if got := h.Services[0].Secrets[name]; got != label {
				t.Errorf("%s %s: %q, want %q", h.Host, name, got, label)
			}
		}
	}
	js, _ := json.Marshal(st)
	for _, digest := range []string{"d1a9", "d2b8", "k7"} {
		if strings.Contains(string(js), digest) {
			t.Errorf("status JSON carries the digest %q: %s", digest, js)
		}
	}
}
