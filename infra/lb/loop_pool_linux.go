package lb

// pool is the loop's idle connections to b (see idlePool), by b's index. The list grows when
// the admin API added a backend beyond it. An index can pass to a new backend after a removal
// while the loop still holds connections to the old one (until its wake-up evicts them), so
// idlePool.get checks each connection's own backend, not only the index.
func (l *loop) pool(b *Backend) *idlePool[*lup] {
	if b.index >= len(l.pools) {
		l.pools = append(l.pools, make([]idlePool[*lup], b.index+1-len(l.pools))...)
	}
	return &l.pools[b.index]
}
