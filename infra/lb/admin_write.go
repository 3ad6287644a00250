package lb

// adminWrites are the admin write API (docs/lb.md: Admin API) over the LB's backends, adminapi's:
// every change applies at once, without a restart and without dropping a request, on both paths.
type adminWrites struct{ s *Server }

func (a adminWrites) Add(addr string) (BackendStatus, bool, error) { return a.s.AddBackend(addr) }
func (a adminWrites) Drain(addr, by string) (BackendStatus, error) { return a.s.DrainBackend(addr, by) }
func (a adminWrites) Remove(addr string) error                     { return a.s.RemoveBackend(addr) }
func (a adminWrites) SetWeight(addr string, weight int) (BackendStatus, error) {
	return a.s.SetBackendWeight(addr, weight)
}
