package alert

import "sync"

// DefaultConfirm is how many observations in a row a new state needs before it is a transition,
// when Tracker.Confirm is 0.
const DefaultConfirm = 2

// Transition is a subject's confirmed change of state.
type Transition struct {
	Subject, From, To string
}

// Tracker turns a stream of observed states into transitions worth one alert each. A state
// counts once it was observed Confirm times in a row, so a state that flaps is never alerted;
// a standing state is alerted once. Every subject starts in Initial (a monitor that starts
// alerts about a subject already in another state, once confirmed). Safe for concurrent use.
type Tracker struct {
	Confirm int
	Initial string

	mu      sync.Mutex
	settled map[string]string // subject → confirmed state
	pending map[string]string // subject → state being confirmed
	count   map[string]int
}

// Observe records subject's state and returns the transition it confirms, if any.
func (t *Tracker) Observe(subject, state string) (Transition, bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.settled == nil {
		t.settled, t.pending, t.count = map[string]string{}, map[string]string{}, map[string]int{}
	}
	confirm := t.Confirm
	if confirm <= 0 {
		confirm = DefaultConfirm
	}
	was, known := t.settled[subject]
	if !known {
		was = t.Initial
	}
	if was == state {
		delete(t.pending, subject)
		delete(t.count, subject)
		return Transition{}, false
	}
	if t.pending[subject] != state {
		t.pending[subject], t.count[subject] = state, 0
	}
	t.count[subject]++
	if t.count[subject] < confirm {
		return Transition{}, false
	}
	t.settled[subject] = state
	delete(t.pending, subject)
	delete(t.count, subject)
	return Transition{Subject: subject, From: was, To: state}, true
}
