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
