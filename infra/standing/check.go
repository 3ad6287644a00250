package standing

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/http1"
)

// Checks are the numbers of a target's active checks: one every Every, each within its own
// timeout (the Probe's business), judged by Thresholds.
type Checks struct {
	Clock      clock.Clock
	Every      time.Duration
	Thresholds Thresholds
}

// Watch checks the target at once and then every c.Every until ctx ends, recording each verdict
// of probe; changed gets every transition a verdict caused. Targets out of rotation keep being checked: that is how they come back.
// A check the checker could not make for its own lack (LocalShortage) is no verdict.
func (s *Standing) Watch(ctx context.Context, c Checks, probe func(context.Context) Verdict, changed func(Transition)) {
	for {
		v := probe(ctx)
		if ctx.Err() != nil {
			return
		}
		if ownLack := v.Status == 0 && LocalShortage(v.Err); !ownLack { // else nothing was learned of the target
			if t, ok := s.Record(v, c.Clock.Now(), c.Thresholds); ok {
				changed(t)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-c.Clock.After(c.Every):
		}
	}
}

// TCPProbe connects to addr within timeout and closes: a connection is a good verdict.
func TCPProbe(ctx context.Context, addr string, timeout time.Duration) Verdict {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Verdict{Err: fmt.Errorf("connect: %w", UnwrapOp(err))}
	}
	_ = conn.Close()
	return Verdict{}
}

// HTTPProbe sends GET path to addr over a fresh connection and reads the status line, all within
// timeout. preamble, when not nil, gives bytes written before the request on the new connection
// (the edge's PROXY header). userAgent names the checker. It is the LB's and the edge's
// transport: a raw socket for the preamble and the status line only, where a service's checks
// (package healthcheck) need the header and body too; the Verdict is judged by Verdict.OK, the
// same pass rule with the lab's status.
func HTTPProbe(ctx context.Context, addr, path, userAgent string, timeout time.Duration, preamble func(net.Conn) ([]byte, error)) Verdict {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return Verdict{Err: fmt.Errorf("connect: %w", UnwrapOp(err))}
	}
	defer conn.Close()
	deadline, _ := ctx.Deadline()
	_ = conn.SetDeadline(deadline)
	var req []byte
	if preamble != nil {
		if req, err = preamble(conn); err != nil {
			return Verdict{Err: fmt.Errorf("preamble: %w", err)}
		}
	}
	req = append(req, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\nUser-Agent: "+userAgent+"\r\nConnection: close\r\n\r\n"...)
	if _, err := conn.Write(req); err != nil {
		return Verdict{Err: fmt.Errorf("send: %w", UnwrapOp(err))}
	}
	const maxHead = 16 << 10
	buf := make([]byte, 0, 1024)
	for {
		if n, err := http1.HeadEnd(buf); err != nil {
			return Verdict{Err: fmt.Errorf("bad response: %w", err)}
		} else if n > 0 {
			var resp http1.Response
			if err := http1.ParseResponse(buf[:n], false, &resp); err != nil {
				return Verdict{Err: err}
			}
			if resp.Status >= 100 && resp.Status < 200 && resp.Status != 101 {
				buf = buf[:copy(buf, buf[n:])] // an interim answer (103 Early Hints): the final one follows
				continue
			}
			return Verdict{Status: resp.Status}
		}
		if len(buf) >= maxHead {
			return Verdict{Err: fmt.Errorf("bad response: no end of the header within %d bytes", maxHead)}
		}
		if len(buf) == cap(buf) {
			buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
		}
		n, err := conn.Read(buf[len(buf):min(cap(buf), maxHead)])
		buf = buf[:len(buf)+n]
		if err != nil && n == 0 {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				return Verdict{Err: fmt.Errorf("%w within %s", ErrNoAnswer, timeout)}
			}
			return Verdict{Err: fmt.Errorf("read: %w", UnwrapOp(err))}
		}
	}
}

// ErrNoAnswer is a check's failure when the target accepted it but said nothing within the
// check's timeout.
var ErrNoAnswer = errors.New("no answer")

// silent reports whether a check's error says the target gave no answer at all: nothing within
// the timeout (connecting, or waiting for the status line), as a host that is gone or frozen
// gives; a refusal, a reset or a bad answer is an answer.
func silent(err error) bool {
	var ne net.Error
	return errors.Is(err, ErrNoAnswer) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) ||
		errors.As(err, &ne) && ne.Timeout()
}

// UnwrapOp drops net.OpError's address noise, keeping the cause (e.g. "connection refused").
func UnwrapOp(err error) error {
	if oe, ok := err.(*net.OpError); ok && oe.Err != nil {
		return oe.Err
	}
	return err
}
