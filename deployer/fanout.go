package deployer

import "sync"

// DefaultParallel is how many hosts a deploy or status looks at at once (--parallel) unless told
// otherwise: a fleet of 100 in ten rounds. bench/fleet.sh's 50 hosts, sharing the deployer's 2
// cores, passed at 10 and failed at 100 (re-verify's own health checks timed out under the load
// the looks made, and healthy hosts counted as failed).
const DefaultParallel = 10

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
