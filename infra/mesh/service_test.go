package mesh

import (
	"strings"
	"testing"
)

// ParseService takes only services that can work: a port from 1 to 65535, and no credentials in
// the URL (a --service value lands in argv, logs, alerts, /mesh/verdicts and bulletins), whose
// error names the flag, the value (credentials masked) and the rule.
func TestParseServiceNamesFlagValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want []string // nil: accepted
		not  string   // a secret the error must not show
	}{
		{raw: "tcp://1.2.3.4:443"},
		{raw: "tls://[2001:db8::1]:443"},
		{raw: "http://vpn.example.com:8080/health"},
		{raw: "https://203.0.113.7:1/"},
		{raw: "tcp://1.2.3.4:65535"},
		{raw: "tcp://1.2.3.4:99999", want: []string{`--service "tcp://1.2.3.4:99999"`, `port "99999"`, "from 1 to 65535"}},
		{raw: "tcp://1.2.3.4:65536", want: []string{`port "65536"`, "from 1 to 65535"}},
		{raw: "tls://1.2.3.4:00", want: []string{`--service "tls://1.2.3.4:00"`, `port "00"`, "from 1 to 65535"}},
		{raw: "tcp://1.2.3.4:0", want: []string{`port "0"`, "from 1 to 65535"}},
		{raw: "tcp://1.2.3.4", want: []string{"needs a host and a port"}},
		{raw: "udp://1.2.3.4:53", want: []string{`scheme "udp"`}},
		{raw: "http://user:hunter2@vpn.example.com:80/h", not: "hunter2",
			want: []string{`--service "http://xxxxx@vpn.example.com:80/h"`, "credentials", "secrets do not belong in --service"}},
		{raw: "https://s3cr3tT0k3n@vpn.example.com:443/", not: "s3cr3tT0k3n",
			want: []string{"credentials", "secrets do not belong in --service"}},
		{raw: "http://user:hunter2@vpn.example.com:8o/h", not: "hunter2", // unparsable: masked all the same
			want: []string{`--service "http://xxxxx@vpn.example.com:8o/h"`, "invalid port"}},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			svc, err := ParseService("service", tc.raw)
			if tc.want == nil {
				if err != nil || svc.URL != tc.raw {
					t.Fatalf("refused or changed: %+v, %v", svc, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("accepted: %+v", svc)
			}
			t.Log(err)
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			if tc.not != "" && strings.Contains(err.Error(), tc.not) {
				t.Errorf("the error shows the secret %q: %v", tc.not, err)
			}
		})
	}
}
