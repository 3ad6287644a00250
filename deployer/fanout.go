package deployer

import "sync"

// DefaultParallel is how many hosts a deploy or status looks at at once (--parallel) unless told
// otherwise: a fleet of 100 in five rounds. bench/fleet.sh's 50 hosts, sharing the deployer's 2
// cores: at 20, 1.26-1.27x its floor with preflight 1.24-1.31 s; at 10, 1.27-1.28x and
// 1.36-1.44 s; at 5, 1.35x and 1.94 s; at 100 it once failed (before a zero502 start cost 12 ms of
// CPU: re-verify's own health checks timed out under the load the looks made, and healthy hosts
// counted as failed).
const DefaultParallel = 20

// parallel is the bound on hosts looked at at once.
func (d *Deployer) parallel() int {
	if d.opts.Parallel > 0 {
		return d.opts.Parallel
	}
	return DefaultParallel
}

// eachHost calls fn(i) for every index in idx, at most d.parallel() at once, and returns when
// every call has. fn must write only what belongs to its own index: callers collect per index and
// read the results in host order afterwards, so what a deploy reports does not depend on which
// host answered first.
func (d *Deployer) eachHost(idx []int, fn func(i int)) {
	if len(idx) == 1 || d.parallel() == 1 {
		for _, i := range idx {
			fn(i)
		}
		return
	}
	slots := make(chan struct{}, d.parallel())
	var wg sync.WaitGroup
	for _, i := range idx {
		slots <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			fn(i)
		}()
	}
	wg.Wait()
}

// hostIndexes is 0 … n-1.
func hostIndexes(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}
