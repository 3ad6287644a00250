package balancer

import (
	"context"
	"fmt"
	"strings"
)

var _ LeaveViewer = Tier(nil)

// LeftState is target's state as the draining side sees it: out of rotation only when every
// instance has it out (the state and time of the last one to take it out); while any instance
// still has it in, in rotation, its state named after the instances that still send it
// requests, listed in still. An instance that is a LeaveViewer itself (a tier) is asked the same.
func (t Tier) LeftState(ctx context.Context, target string) (TargetState, []string, error) {
	if len(t) == 0 {
		return TargetState{}, nil, fmt.Errorf("a tier of no balancer: %w", ErrNoView)
	}
	var out, in TargetState
	var still []string
	for _, b := range t {
		var st TargetState
		var err error
		names := []string{b.Name()}
		if lv, ok := b.(LeaveViewer); ok {
			var s []string
			st, s, err = lv.LeftState(ctx, target)
			if len(s) > 0 {
				names = s
			}
		} else {
			st, err = b.TargetState(ctx, target)
		}
		if err != nil {
			return TargetState{}, nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		if st.InRotation {
			if len(still) == 0 {
				in = st
			}
			still = append(still, names...)
			continue
		}
		if out.State == "" || st.Since.After(out.Since) {
			out = st
		}
	}
	if len(still) > 0 {
		return TargetState{State: in.State + " at " + strings.Join(still, ", "), InRotation: true, Since: in.Since}, still, nil
	}
	return out, nil, nil
}
