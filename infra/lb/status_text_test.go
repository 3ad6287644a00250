package lb

import "testing"

// The LB's own answers carry the standard reason phrase of every status it writes, 429 among
// them (it was "Status 429"); a code with none gets "Status N".
func TestTheLBsAnswersCarryTheirReasonPhrase(t *testing.T) {
	for code, want := range map[int]string{400: "Bad Request", 408: "Request Timeout", 429: "Too Many Requests",
		431: "Request Header Fields Too Large", 502: "Bad Gateway", 504: "Gateway Timeout", 599: "Status 599"} {
		if got := statusText(code); got != want {
			t.Errorf("statusText(%d) = %q, want %q", code, got, want)
		}
	}
}
