package deployer

import (
	"testing"

	"github.com/zero502/zero502/infra/runtime"
)

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

func TestVersionsOfNamesEveryVersionRunning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		versions []string
		want     string
	}{
		{[]string{"v2"}, "v2"},
		{[]string{"v2", "v2"}, "v2"},
		{[]string{"v2", "v1"}, "v1+v2"},
	} {
		var insts []runtime.Instance
		for _, v := range tc.versions {
			insts = append(insts, runtime.Instance{Version: v})
		}
		if got := versionsOf(insts); got != tc.want {
			t.Errorf("versionsOf(%v) = %q, want %q", tc.versions, got, tc.want)
		}
	}
}
