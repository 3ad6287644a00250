package lb

import (
	"fmt"
	"sync"
	"testing"
)

func TestRoundRobinIsStrictOverThreeBackends(t *testing.T) {
	bs := []*testBackend{startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")}
	l := startLB(t, fastSettings(bs[0].addr(), bs[1].addr(), bs[2].addr()))
	c := client()
	var order []string
	for i := 0; i < 30; i++ {
		code, body, _ := get(t, c, l.url("/"))
		if code != 200 {
			t.Fatalf("request %d: %d", i, code)
		}
		order = append(order, body)
	}
	for i := 3; i < 30; i++ {
		if order[i] != order[i-3] {
			t.Fatalf("not strictly in rotation: %v", order)
		}
	}
	for _, b := range bs {
		if n := b.hits.Load(); n != 10 {
			t.Fatalf("backend %s got %d of 30, want 10 (%v)", b.name, n, order)
		}
	}
}

func TestRoundRobinStaysFairUnderConcurrency(t *testing.T) {
	bs := []*testBackend{startBackend(t, "a"), startBackend(t, "b"), startBackend(t, "c")}
	l := startLB(t, fastSettings(bs[0].addr(), bs[1].addr(), bs[2].addr()))
	var wg sync.WaitGroup
	errs := make(chan error, 300)
	for w := 0; w < 10; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := client()
			for i := 0; i < 30; i++ {
				resp, err := c.Get(l.url("/"))
				if err != nil {
					errs <- err
					return
				}
				resp.Body.Close()
				if resp.StatusCode != 200 {
					errs <- fmt.Errorf("status %d", resp.StatusCode)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, b := range bs {
		if n := b.hits.Load(); n < 80 || n > 120 {
			t.Fatalf("backend %s got %d of 300, want 100 ±20%%", b.name, n)
		}
	}
}

func TestRotationSkipsTriedAndUnhealthy(t *testing.T) {
	var bs []*Backend
	for i := 0; i < 3; i++ {
		bs = append(bs, newBackend(fmt.Sprint(i), i, zeroTime))
	}
	r := newRotation(bs)
	bs[1].Eject("test", zeroTime)
	r.rebuild()
	counts := map[string]int{}
	for i := 0; i < 100; i++ {
		counts[r.pick(&tried{}).Address]++
	}
	if counts["0"] != 50 || counts["2"] != 50 {
		t.Fatalf("two in rotation must split 50/50: %v", counts)
	}
	var tr tried
	tr.add(bs[0])
	tr.add(bs[2])
	if b := r.pick(&tr); b != nil {
		t.Fatalf("every healthy backend tried: got %s, want nil", b.Address)
	}
}

// weighted is a rotation over backends "0", "1", … in rotation with these weights.
func weighted(weights ...int) (*rotation, []*Backend) {
	bs := benchBackends(len(weights))
	for i, w := range weights {
		bs[i].weight.Store(int32(w))
	}
	return newRotation(bs), bs
}

// picks are the addresses of n picks of fresh requests.
func picks(r *rotation, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = r.pick(&tried{}).Address
	}
	return out
}

func TestSmoothOrderIsNginxs(t *testing.T) {
	for _, c := range []struct {
		weights []int
		want    []int32
	}{
		{[]int{5, 1, 1}, []int32{0, 0, 1, 0, 2, 0, 0}}, // nginx's own example: a a b a c a a
		{[]int{10, 90}, []int32{1, 1, 1, 1, 0, 1, 1, 1, 1, 1}},
		{[]int{200, 100}, []int32{0, 1, 0}},
		{[]int{100, 100, 100}, nil}, // equal: plain rotation
		{[]int{1000}, nil},
		{nil, nil},
	} {
		got := smoothOrder(c.weights)
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("smoothOrder(%v) = %v, want %v", c.weights, got, c.want)
		}
	}
}

func TestWeightedRotationSplitsExactlyOverCycles(t *testing.T) {
	r, _ := weighted(10, 90)
	order := picks(r, 1000)
	counts := map[string]int{}
	run, gap := 0, 0
	for _, a := range order {
		counts[a]++
		if a == "1" {
			run++
			gap = max(gap, run)
		} else {
			run = 0
		}
	}
	if counts["0"] != 100 || counts["1"] != 900 {
		t.Fatalf("weights 10 and 90 over 1000 picks: %v, want exactly 100 and 900", counts)
	}
	if gap > 9 {
		t.Fatalf("the heavy backend got %d picks in a row, want at most 9: the light one's picks spread evenly", gap)
	}

	r, _ = weighted(100, 200, 300, 1)
	counts = map[string]int{}
	for _, a := range picks(r, 601*3) {
		counts[a]++
	}
	if counts["0"] != 300 || counts["1"] != 600 || counts["2"] != 900 || counts["3"] != 3 {
		t.Fatalf("weights 100, 200, 300, 1 over three cycles of 601: %v, want 300, 600, 900, 3", counts)
	}
}

func TestEqualWeightsAreStrictRotation(t *testing.T) {
	for _, w := range []int{1, 100, 1000} {
		r, _ := weighted(w, w, w)
		if got := picks(r, 9); fmt.Sprint(got) != "[0 1 2 0 1 2 0 1 2]" {
			t.Fatalf("three at weight %d: %v, want strict rotation", w, got)
		}
	}
}

func TestWeightChangeAndEjectionApplyOnRebuild(t *testing.T) {
	r, bs := weighted(100, 100)
	bs[1].weight.Store(300)
	r.rebuild()
	counts := map[string]int{}
	for _, a := range picks(r, 400) {
		counts[a]++
	}
	if counts["0"] != 100 || counts["1"] != 300 {
		t.Fatalf("after weight 300 on one of two: %v, want 100 and 300", counts)
	}
	r, bs = weighted(10, 90, 100)
	bs[2].Eject("test", zeroTime)
	r.rebuild()
	counts = map[string]int{}
	for _, a := range picks(r, 1000) {
		counts[a]++
	}
	if counts["0"] != 100 || counts["1"] != 900 || counts["2"] != 0 {
		t.Fatalf("weights 10, 90 in rotation and 100 ejected: %v, want 100, 900 and none", counts)
	}
}

func TestRetryGoesToAnotherBackendWhateverItsWeight(t *testing.T) {
	r, bs := weighted(1000, 1, 1)
	for i := 0; i < 2004; i++ {
		var tr tried
		first := r.pick(&tr)
		tr.add(first)
		next := r.pick(&tr)
		if next == nil || next == first {
			t.Fatalf("pick %d: the retry after %s got %v, want another backend", i, first.Address, next)
		}
		if first == bs[0] && next != bs[1] {
			t.Fatalf("pick %d: the retry after the heavy backend went to %s, want the next in list order, 1", i, next.Address)
		}
	}
	var tr tried
	tr.add(bs[1])
	tr.add(bs[2])
	for i := 0; i < 10; i++ {
		if b := r.pick(&tr); b != bs[0] {
			t.Fatalf("with the light ones tried: %v, want the heavy one", b)
		}
	}
	tr.add(bs[0])
	if b := r.pick(&tr); b != nil {
		t.Fatalf("every backend tried: got %s, want nil", b.Address)
	}
}

func TestPickAllocatesNothing(t *testing.T) {
	for _, weights := range [][]int{{100, 100, 100}, {10, 90}, {1, 1000, 7, 333}} {
		r, bs := weighted(weights...)
		if n := testing.AllocsPerRun(1000, func() {
			if r.pick(&tried{}) == nil {
				t.Fatal("no backend picked")
			}
		}); n != 0 {
			t.Errorf("weights %v: %v allocations per pick, want 0", weights, n)
		}
		if n := testing.AllocsPerRun(1000, func() {
			var tr tried
			tr.add(bs[0])
			if r.pick(&tr) == nil {
				t.Fatal("no backend picked on retry")
			}
		}); n != 0 {
			t.Errorf("weights %v: %v allocations per retry pick, want 0", weights, n)
		}
	}
}
