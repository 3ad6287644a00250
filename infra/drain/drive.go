package drain

// Server is a server that runs its own listener and connections (the in-house LB, whose event
// loops accept and serve without net/http): Drive calls it at each step of the handshake.
type Server interface {
	// Draining starts the window: health answers 503 while serving and accepting go on.
	Draining()
	// StopAccepting closes the listener and idle connections; in-flight work goes on.
	StopAccepting()
	// Idle is closed once no connection is open.
	Idle() <-chan struct{}
	// Cut closes what is still open when the shutdown budget ran out and says how many.
	Cut() int
}

// Drive runs the handshake for srv (call it once the drain began, a cancelled context): the
// same phases, log lines and OnPhase calls as Serve and ServeTCP. srv.Draining, then the window
// on hs.Clock, then srv.StopAccepting, then up to hs.Shutdown for srv.Idle, then srv.Cut. It
// returns nil once done; an error only for an invalid Handshake, before anything happened.
func Drive(addr string, srv Server, hs Handshake) error {
	hs, err := hs.prepare()
	if err != nil {
		return err
	}
	var tl timeline
	srv.Draining()
	hs.enter(&tl, PhaseDraining, addr)
	<-hs.Clock.After(hs.Window)
	srv.StopAccepting()
	hs.enter(&tl, PhaseStoppedAccepting, addr)
	select {
	case <-srv.Idle():
	case <-hs.Clock.After(hs.Shutdown):
		tl.cut = srv.Cut()
	}
	hs.enter(&tl, PhaseDone, addr)
	return nil
}
