package topology

import (
	"strings"
	"testing"
)

// decideErr parses and decides a paste and returns the error either step gives; the test
// fails when the paste is accepted.
func decideErr(t *testing.T, text string) error {
	t.Helper()
	p, err := ParseTMSH(strings.NewReader(text))
	if err == nil {
		var d *Decision
		d, err = Decide(p, 0)
		if err == nil {
			t.Fatalf("accepted; answer %+v\n%s", d.Answer, text)
		}
	}
	if !strings.HasSuffix(err.Error(), tmshShape) {
		t.Errorf("error without the expected shape: %v", err)
	}
	return err
}

// errorSays fails the test unless err says every one of want.
func errorSays(t *testing.T, err error, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q\ndoes not say %q", err, w)
		}
	}
}

// sameNamePools: an A and an AAAA pool share their full path. The AAAA pool's only member is
// down, the A pool's is up and scored by the pool record.
const sameNamePools = `gtm topology ldns: subnet 10.1.0.0/16 server: pool /Common/pool_near { score 50 }
gtm wideip TYPE www.example.com { pool-lb-mode topology pools { /Common/pool_near { order 0 } } }
gtm pool aaaa /Common/pool_near { fallback-mode return-to-dns load-balancing-mode topology members { /Common/dc6:/Common/vs6 { member-order 0 state down } } }
gtm pool a /Common/pool_near { fallback-mode return-to-dns load-balancing-mode topology members { /Common/dc4:/Common/vs4 { member-order 0 } } }
source ip=10.1.2.7
`

// A wide IP's pools are the pools of its own record type: gtm wideip a uses gtm pool a, and an
// AAAA pool of the same full path (pasted first) is not it.
func TestTopologyTMSHAWideIPUsesItsAPoolNotTheAAAAPoolOfTheSameName(t *testing.T) {
	d := decidePaste(t, strings.Replace(sameNamePools, "TYPE", "a", 1))
	winnerIs(t, d, "pool_near")
	if d.Answer == nil || d.Answer.By == "local-bind" || strings.Contains(d.Answer.Text, "vs6") {
		t.Fatalf("the A wide IP was answered from the AAAA pool of the same name: %+v", d.Answer)
	}
	if d.Answer.By != "topology" || d.Answer.Pool != "pool_near" || d.Answer.Member != "dc4:vs4" {
		t.Errorf("answer %+v, want member dc4:vs4 of the A pool pool_near by topology", d.Answer)
	}

	// and the AAAA wide IP uses the AAAA pool: its only member is down, so the local BIND answers
	d = decidePaste(t, strings.Replace(sameNamePools, "TYPE", "aaaa", 1))
	if d.Answer == nil || d.Answer.By != "local-bind" || d.Answer.Pool != "pool_near" || len(d.PoolLevel) != 1 ||
		len(d.PoolLevel[0].Candidates) != 0 {
		t.Errorf("the AAAA wide IP: answer %+v pool level %+v, want the AAAA pool_near with no available member", d.Answer, d.PoolLevel)
	}

	// an A wide IP whose A pool is not pasted does not borrow the AAAA one
	only6 := strings.Replace(sameNamePools, "TYPE", "a", 1)
	only6 = strings.Replace(only6, only6[strings.Index(only6, "gtm pool a "):strings.Index(only6, "source")], "", 1)
	d = decidePaste(t, only6)
	if d.Answer == nil || d.Answer.By != "topology" || len(d.PoolLevel) != 0 || !strings.Contains(d.Answer.Text, "not pasted") {
		t.Errorf("the A pool is not pasted: answer %+v pool level %+v, want the wide IP's choice and no member decision", d.Answer, d.PoolLevel)
	}
}

// Where the paste cannot tell two pool stanzas apart (the topology records and a candidates
// line name pools by bare name; without a wide IP nothing gives the record type), the paste is
// refused, naming both stanzas and what to do, instead of answering from whichever came first.
func TestTopologyTMSHPoolsThatReadAsOneNameAreRefused(t *testing.T) {
	const record = "gtm topology ldns: subnet 10.1.0.0/16 server: pool /Common/p { score 50 }\n"
	const query = "source ip=10.1.2.7\n"
	for _, tc := range []struct {
		name, paste string
		says        []string
	}{
		{"two record types, no wide IP", record +
			"gtm pool aaaa /Common/p { load-balancing-mode topology members { /Common/s6:/Common/vs6 { } } }\n" +
			"gtm pool a /Common/p { load-balancing-mode topology members { /Common/s4:/Common/vs4 { } } }\n" + query,
			[]string{"gtm pool aaaa /Common/p (line 2)", "gtm pool a /Common/p (line 3)", "paste the gtm wideip stanza"}},
		{"two partitions, one type", record +
			"gtm wideip a www.example.com { pool-lb-mode topology pools { /Common/p { order 0 } } }\n" +
			"gtm pool a /Common/p { load-balancing-mode topology members { /Common/s1:/Common/vs1 { } } }\n" +
			"gtm pool a /Tenant/p { load-balancing-mode topology members { /Tenant/s2:/Tenant/vs2 { } } }\n" + query,
			[]string{"gtm pool a /Common/p (line 3)", "gtm pool a /Tenant/p (line 4)", "partitions are dropped", "one partition"}},
		{"an untyped pool and a typed one", record +
			"gtm wideip a www.example.com { pool-lb-mode topology pools { /Common/p { order 0 } } }\n" +
			"gtm pool /Common/p { load-balancing-mode topology members { /Common/s1:/Common/vs1 { } } }\n" +
			"gtm pool a /Common/p { load-balancing-mode topology members { /Common/s2:/Common/vs2 { } } }\n" + query,
			[]string{"gtm pool /Common/p (line 3)", "gtm pool a /Common/p (line 4)"}},
		{"one pool pasted twice", record +
			"gtm pool a /Common/p { load-balancing-mode topology members { /Common/s1:/Common/vs1 { } } }\n" +
			"gtm pool a /Common/p { load-balancing-mode round-robin members { /Common/s1:/Common/vs1 { } } }\n" + query,
			[]string{"line 3: gtm pool a /Common/p is pasted twice (lines 2 and 3)", "paste each pool once"}},
		{"one wide IP pasted twice", record +
			"gtm wideip a www.example.com { pool-lb-mode topology pools { /Common/p { order 0 } } }\n" +
			"gtm wideip a www.example.com { pool-lb-mode round-robin pools { /Common/p { order 0 } } }\n" + query,
			[]string{"line 3: gtm wideip a www.example.com is pasted twice (lines 2 and 3)", "paste each wide IP once"}},
		{"the wide IP's pool is in another partition", record +
			"gtm wideip a www.example.com { pool-lb-mode topology pools { /Common/p { order 0 } } }\n" +
			"gtm pool a /Tenant/p { load-balancing-mode topology members { /Tenant/s1:/Tenant/vs1 { } } }\n" + query,
			[]string{"wide IP www.example.com (line 2) uses pool /Common/p", "gtm pool a /Tenant/p (line 3)", "paste the gtm pool a /Common/p stanza"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errorSays(t, decideErr(t, tc.paste), tc.says...)
		})
	}

	// an A and an AAAA wide IP of one name are two wide IPs: the first is decided
	d := decidePaste(t, record+
		"gtm wideip a www.example.com { pool-lb-mode topology pools { /Common/p { order 0 } } }\n"+
		"gtm wideip aaaa www.example.com { pool-lb-mode topology pools { /Common/p { order 0 } } }\n"+
		"gtm pool aaaa /Common/p { load-balancing-mode topology members { /Common/s6:/Common/vs6 { } } }\n"+
		"gtm pool a /Common/p { load-balancing-mode topology members { /Common/s4:/Common/vs4 { } } }\n"+query)
	if d.Answer == nil || d.Answer.Member != "s4:vs4" || !strings.Contains(strings.Join(d.Notes, "\n"), "deciding wide IP a www.example.com, the first pasted") {
		t.Errorf("answer %+v notes %q, want the A wide IP decided from the A pool", d.Answer, d.Notes)
	}
}

// twoServersOneVSName: s1 (DC1, scored 50) and s2 (DC2, scored 40) each have a virtual server
// named vs1, both members of pool p.
const twoServersOneVSName = `gtm topology ldns: subnet 10.1.0.0/16 server: datacenter /Common/DC1 { score 50 }
gtm topology ldns: subnet 10.1.0.0/16 server: datacenter /Common/DC2 { score 40 }
gtm pool a /Common/p { load-balancing-mode topology fallback-mode return-to-dns members { /Common/s1:/Common/vs1 { member-order 0 } /Common/s2:/Common/vs1 { member-order 1 } } }
gtm server /Common/s1 { datacenter /Common/DC1 virtual-servers { /Common/vs1 { destination 192.0.2.1:80 } } }
gtm server /Common/s2 { datacenter /Common/DC2 virtual-servers { /Common/vs1 { destination 192.0.2.2:80 } } }
source ip=10.1.2.7
`

// A bare VS name that members of several servers share does not say which is down: it is
// refused, listing the SERVER:VS names to write instead of marking them all down.
func TestTopologyTMSHAmbiguousDownNameIsRefused(t *testing.T) {
	err := decideErr(t, twoServersOneVSName+"down vs1\n")
	errorSays(t, err, "down vs1", "s1:vs1, s2:vs1", "down SERVER:VS", "down s1:vs1")
}

// down SERVER:VS (with or without partitions) marks that one member only: the other server's
// vs1 stays a candidate, and the pool's topology answers with it.
func TestTopologyTMSHServerQualifiedDownMarksOnlyThatMember(t *testing.T) {
	for _, tc := range []struct {
		down, answer, gone string
		score, from        int
	}{
		{"down s2:vs1", "s1:vs1", "s2:vs1", 50, 1},
		{"down /Common/s2:/Common/vs1", "s1:vs1", "s2:vs1", 50, 1},
		{"down s1:vs1", "s2:vs1", "s1:vs1", 40, 2},
	} {
		t.Run(tc.down, func(t *testing.T) {
			d := decidePaste(t, twoServersOneVSName+tc.down+"\n")
			winnerIs(t, d, tc.answer)
			if s, from, ok := candidateScore(t, d, tc.answer); !ok || s != tc.score || from != tc.from {
				t.Errorf("%s: score %d from record %d (%v), want %d from record %d", tc.answer, s, from, ok, tc.score, tc.from)
			}
			for _, c := range d.Candidates {
				if c.Name == tc.gone {
					t.Errorf("%s is down but still a candidate: %+v", tc.gone, d.Candidates)
				}
			}
			if d.Answer == nil || d.Answer.By != "topology" || d.Answer.Pool != "p" || d.Answer.Member != tc.answer {
				t.Errorf("answer %+v, want member %s of pool p by topology", d.Answer, tc.answer)
			}
		})
	}
}

// A candidates line has the same ambiguity: a bare VS name shared by several servers' members
// is refused; SERVER:VS names them.
func TestTopologyTMSHAmbiguousCandidateMemberIsRefused(t *testing.T) {
	err := decideErr(t, twoServersOneVSName+"candidates vs1\n")
	errorSays(t, err, "candidates vs1", "s1:vs1, s2:vs1", "SERVER:VS")

	d := decidePaste(t, twoServersOneVSName+"candidates s2:vs1\n")
	winnerIs(t, d, "s2:vs1")
	if len(d.Candidates) != 1 {
		t.Errorf("candidates s2:vs1: %+v, want that member alone", d.Candidates)
	}
}
