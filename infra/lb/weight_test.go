package lb

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/internal/testrig/poll"
	"github.com/zero502/zero502/internal/testrig/tcpserver"
)

// setWeight sends PUT /admin/backends/{addr}/weight with body (and a bearer token when token
// is not empty) and returns the status and the answer.
func setWeight(t *testing.T, admin, addr, token, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("PUT", "http://"+admin+"/admin/backends/"+addr+"/weight", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("PUT %s weight: %v", addr, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// mustSetWeight sets addr's weight over the admin API and checks the answer carries it.
func mustSetWeight(t *testing.T, admin, addr string, weight int) {
	t.Helper()
	code, body := setWeight(t, admin, addr, "", fmt.Sprintf(`{"weight": %d}`, weight))
	if st := adminStatus(t, body); code != 200 || st.Weight != weight || st.Address != addr {
		t.Fatalf("PUT %s weight %d: %d %s, want 200 and the backend with weight %d", addr, weight, code, body, weight)
	}
}

// inRotation waits until every addr is in rotation.
func inRotation(t *testing.T, admin string, addrs ...string) {
	t.Helper()
	poll.Until(t, 10*time.Second, fmt.Sprintf("%v in rotation", addrs), func() bool {
		for _, a := range addrs {
			if st, ok := statusOf(t, admin, a); !ok || !st.InRotation {
				return false
			}
		}
		return true
	})
}

// sequence sends n sequential GETs over one keep-alive client and returns which backend
// answered each.
func sequence(t *testing.T, l *testLB, n int) []string {
	t.Helper()
	c := client()
	order := make([]string, n)
	for i := range order {
		code, body, _ := get(t, c, l.url("/"))
		if code != 200 {
			t.Fatalf("request %d: %d %q", i, code, body)
		}
		order[i] = body
	}
	return order
}

func TestWeightsSplitTrafficAndShowInTheAdminAPIStatusPageAndMetrics(t *testing.T) {
	light, heavy := startBackend(t, "light"), startBackend(t, "heavy")
	l := startLB(t, fastSettings(light.addr(), heavy.addr()))
	admin := l.AdminAddr()
	for _, a := range []string{light.addr(), heavy.addr()} {
		if st, _ := statusOf(t, admin, a); st.Weight != adminapi.DefaultWeight {
			t.Fatalf("configured backend %s: weight %d, want the default %d", a, st.Weight, adminapi.DefaultWeight)
		}
	}
	mustSetWeight(t, admin, light.addr(), 10)
	mustSetWeight(t, admin, heavy.addr(), 90)
	mustSetWeight(t, admin, heavy.addr(), 90) // the same again: idempotent
	inRotation(t, admin, light.addr(), heavy.addr())

	order := sequence(t, l, 1000)
	if n, m := light.hits.Load(), heavy.hits.Load(); n != 100 || m != 900 {
		t.Fatalf("weights 10 and 90 over 1000 requests: %d and %d, want exactly 100 and 900", n, m)
	}
	for i := 1; i < len(order); i++ {
		if order[i] == "light" && order[i-1] == "light" {
			t.Fatalf("requests %d and %d both went to the light backend: the weighted picks must spread", i-1, i)
		}
	}

	if st, _ := statusOf(t, admin, light.addr()); st.Weight != 10 {
		t.Errorf("GET /admin/backends: light weight %d, want 10", st.Weight)
	}
	code, page := adminCall(t, admin, "GET", "/", "")
	for _, want := range []string{"<th>weight</th>", light.addr() + `</td><td class="healthy">healthy</td><td class="weight">10</td>`,
		heavy.addr() + `</td><td class="healthy">healthy</td><td class="weight">90</td>`} {
		if code != 200 || !strings.Contains(page, want) {
			t.Errorf("status page (%d) lacks %s", code, want)
		}
	}
	_, metrics := adminCall(t, admin, "GET", "/metrics", "")
	for _, want := range []string{
		`zero502_lb_backend_weight{backend="` + light.addr() + `"} 10`,
		`zero502_lb_backend_weight{backend="` + heavy.addr() + `"} 90`,
		`zero502_lb_admin_changes_total{action="weight"} 2`, // the same weight again is no change
	} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

func TestEqualWeightsAlternateAsPlainRoundRobin(t *testing.T) {
	a, b := startBackend(t, "a"), startBackend(t, "b")
	l := startLB(t, fastSettings(a.addr(), b.addr()))
	admin := l.AdminAddr()
	inRotation(t, admin, a.addr(), b.addr())
	first := sequence(t, l, 10)
	mustSetWeight(t, admin, a.addr(), 7)
	mustSetWeight(t, admin, b.addr(), 7)
	order := append(first, sequence(t, l, 10)...)
	for i, name := range order {
		if want := []string{"a", "b"}[i%2]; name != want {
			t.Fatalf("request %d went to %s, want strict alternation a, b at equal weights (default, then 7): %v", i, name, order)
		}
	}
}

func TestACanaryAddedAtASmallWeightGetsItsShareOnceInRotation(t *testing.T) {
	stable, canary := startBackend(t, "stable"), startBackend(t, "canary")
	l := startLB(t, fastSettings(stable.addr()))
	admin := l.AdminAddr()
	mustSetWeight(t, admin, stable.addr(), 900)
	if code, body := adminCall(t, admin, "PUT", "/admin/backends/"+canary.addr(), ""); code != 201 {
		t.Fatalf("PUT canary: %d %s", code, body)
	}
	mustSetWeight(t, admin, canary.addr(), 100) // while it joins: no traffic yet
	inRotation(t, admin, stable.addr(), canary.addr())
	sequence(t, l, 1000)
	if n := canary.hits.Load(); n != 100 {
		t.Fatalf("the canary at weight 100 beside 900 got %d of 1000, want exactly 100", n)
	}
	// Drained and undrained, it keeps its weight.
	adminCall(t, admin, "POST", "/admin/backends/"+canary.addr()+"/drain", "")
	adminCall(t, admin, "PUT", "/admin/backends/"+canary.addr(), "")
	inRotation(t, admin, canary.addr())
	if st, _ := statusOf(t, admin, canary.addr()); st.Weight != 100 {
		t.Fatalf("after drain and undrain: canary weight %d, want 100 kept", st.Weight)
	}
	before := canary.hits.Load()
	sequence(t, l, 1000)
	if n := canary.hits.Load() - before; n != 100 {
		t.Fatalf("the undrained canary got %d of 1000, want exactly 100", n)
	}
}

func TestBadWeightsAreRefusedNamingTheFieldAndTheRule(t *testing.T) {
	a := startBackend(t, "a")
	l := startLB(t, fastSettings(a.addr()))
	admin := l.AdminAddr()
	for body, value := range map[string]string{
		`{"weight": 0}`: "weight 0", `{"weight": -1}`: "weight -1", `{"weight": 1001}`: "weight 1001",
		`{"weight": "ten"}`: `weight "ten": not a number`, `{"weight": 2.5}`: "weight 2.5",
		`{}`: `"weight" is missing`, `weight=10`: "the body must be the JSON object", ``: "the body must be the JSON object",
	} {
		code, answer := setWeight(t, admin, a.addr(), "", body)
		if code != 400 || !strings.Contains(answer, value) || !strings.Contains(answer, "weight must be an integer from 1 to 1000") {
			t.Errorf("PUT weight %s: %d %q, want 400 with %q and the rule", body, code, answer, value)
		}
	}
	if code, answer := setWeight(t, admin, "127.0.0.1:0", "", `{"weight": 10}`); code != 400 || !strings.Contains(answer, "port") {
		t.Errorf("PUT weight of a bad address: %d %q, want 400 naming the port rule", code, answer)
	}
	if code, answer := setWeight(t, admin, tcpserver.FreeAddr(t), "", `{"weight": 10}`); code != 404 {
		t.Errorf("PUT weight of an unknown backend: %d %q, want 404", code, answer)
	}
	if code, _ := adminCall(t, admin, "GET", "/admin/backends/"+a.addr()+"/weight", ""); code != 405 {
		t.Errorf("GET …/weight: %d, want 405 (GET never changes state)", code)
	}
	if st, _ := statusOf(t, admin, a.addr()); st.Weight != adminapi.DefaultWeight {
		t.Fatalf("refused weight writes changed the weight to %d", st.Weight)
	}
}

func TestWeightWriteNeedsTheTokenLikeTheOtherWrites(t *testing.T) {
	a := startBackend(t, "a")
	set := fastSettings(a.addr())
	set.Admin, set.AdminToken = "0.0.0.0:0", "s3cret"
	l := startLB(t, set)
	_, port, _ := net.SplitHostPort(l.AdminAddr())
	admin := net.JoinHostPort("127.0.0.1", port)
	for _, token := range []string{"", "wrong"} {
		if code, body := setWeight(t, admin, a.addr(), token, `{"weight": 10}`); code != 401 || !strings.Contains(body, "balancer.admin_token") {
			t.Errorf("PUT weight with token %q: %d %q, want 401 naming balancer.admin_token", token, code, body)
		}
	}
	if w := l.Backends()[0].Weight(); w != adminapi.DefaultWeight {
		t.Fatalf("a refused weight write set the weight to %d", w)
	}
	if code, body := setWeight(t, admin, a.addr(), "s3cret", `{"weight": 10}`); code != 200 || adminStatus(t, body).Weight != 10 {
		t.Errorf("PUT weight with the token: %d %s, want 200 and weight 10", code, body)
	}
}

func TestAFailedAttemptAtTheHeavyBackendIsRetriedOnTheLightOne(t *testing.T) {
	light := startBackend(t, "light")
	dying := startBackend(t, "dying")
	// light first: without the weights, the first request would go to it
	l := startLB(t, fastSettings(light.addr(), dying.addr()), slowChecks())
	admin := l.AdminAddr()
	inRotation(t, admin, dying.addr(), light.addr())
	mustSetWeight(t, admin, dying.addr(), 1000)
	mustSetWeight(t, admin, light.addr(), 1)
	// No request went through yet: the first pick is the weighted order's first, the heavy one.
	dying.srv.Close() // from here its connections are refused
	if code, body, _ := get(t, client(), l.url("/")); code != 200 || body != "light" {
		t.Fatalf("the first request: %d %q, want 200 from the light backend", code, body)
	}
	st := l.Backends()[1].Status()
	if l.retries.Load() != 1 || st.Outcomes.Failures.Connect != 1 || st.State != Unhealthy {
		t.Fatalf("after the first request: retries %d, the heavy backend's connect failures %d, state %s; want its "+
			"refused attempt at the heavy backend retried once on the light one, the heavy one ejected",
			l.retries.Load(), st.Outcomes.Failures.Connect, st.State)
	}
	for i := 0; i < 5; i++ {
		if code, body, _ := get(t, client(), l.url("/")); code != 200 || body != "light" {
			t.Fatalf("request %d after the ejection: %d %q, want 200 from the light backend", i, code, body)
		}
	}
}
