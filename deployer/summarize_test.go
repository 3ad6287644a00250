package deployer

import "testing"

func TestSummarizeNamesOneVersionOrEachService(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		versions map[string]string
		services int
		want     string
	}{
		{map[string]string{}, 2, ""},
		{map[string]string{"web": "v2", "worker": "v2"}, 2, "v2"},
		{map[string]string{"web": "v2"}, 2, "web=v2"},
		{map[string]string{"web": "v2", "worker": "v1"}, 2, "web=v2,worker=v1"},
	} {
		if got := summarize(tc.versions, tc.services); got != tc.want {
			t.Errorf("summarize(%v, %d) = %q, want %q", tc.versions, tc.services, got, tc.want)
		}
	}
}
