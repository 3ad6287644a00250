package measure

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/coder/websocket"
)

// SessionStats are what the load's long-lived WebSocket sessions saw (Options.Sessions).
type SessionStats struct {
	// Opened counts every session opened, the reopenings included.
	Opened int `json:"opened"`
	// EndedClean counts sessions the server ended cleanly (a close frame, or the connection
	// closed with nothing unanswered or before the answer began): the client reopened them and
	// sent the unanswered message again, as a client of a chat or a live feed does.
	EndedClean int `json:"ended_clean"`
	// Echoed counts the messages answered.
	Echoed int `json:"echoed"`
	// Lost counts the failures: a session reset (RST), a message not answered in time, or a
	// session that could not be reopened. Each is a failure of the load.
	Lost int `json:"lost"`
	// Errors are a few of the failures' messages, for diagnosis.
	Errors []string `json:"errors,omitempty"`
}

// sessions runs n sessions until ctx is done.
type sessions struct {
	url, host string
	client    *http.Client
	every     time.Duration
	timeout   time.Duration

	mu    sync.Mutex
	stats SessionStats
}

func (s *sessions) run(ctx context.Context, n int) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.session(ctx, i)
		}()
	}
	wg.Wait()
}

func (s *sessions) note(f func(*SessionStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.stats)
}

func (s *sessions) lost(err error) {
	s.note(func(st *SessionStats) {
		st.Lost++
		if len(st.Errors) < 5 {
			st.Errors = append(st.Errors, err.Error())
		}
	})
}

func (s *sessions) snapshot() SessionStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.stats
	out.Errors = append([]string(nil), s.stats.Errors...)
	return out
}

// received is one message read, or the end of the session.
type received struct {
	msg string
	err error
}

// session keeps session i open until ctx is done: one message every s.every, each echoed.
func (s *sessions) session(ctx context.Context, i int) {
	seq := 0
	pending := "" // the message sent and not answered yet, resent on a reopened session
	for ctx.Err() == nil {
		dctx, cancel := context.WithTimeout(ctx, s.timeout)
		c, _, err := websocket.Dial(dctx, s.url, &websocket.DialOptions{HTTPClient: s.client, Host: s.host})
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				s.lost(fmt.Errorf("session %d: reopen: %w", i, err))
				sleepCtx(ctx, s.every)
			}
			continue
		}
		s.note(func(st *SessionStats) { st.Opened++ })
		reads := make(chan received, 1)
		go func() {
			for {
				_, data, err := c.Read(context.WithoutCancel(ctx))
				reads <- received{msg: string(data), err: err}
				if err != nil {
					return
				}
			}
		}()
		pending, seq = s.converse(ctx, c, reads, i, pending, seq)
		c.CloseNow()
	}
}

// converse sends and checks messages on one open session until it ends; it returns the message
// left unanswered (to resend) and the next sequence number.
func (s *sessions) converse(ctx context.Context, c *websocket.Conn, reads <-chan received, i int, pending string, seq int) (string, int) {
	tick := time.NewTicker(s.every)
	defer tick.Stop()
	for {
		if pending == "" {
			select {
			case <-ctx.Done():
				_ = c.Close(websocket.StatusNormalClosure, "load done")
				return "", seq
			case r := <-reads:
				if r.err == nil { // the server spoke first (a welcome, a push): not the echo asked for
					s.lost(fmt.Errorf("session %d: got %q, which no message asked for (SessionPath must echo)", i, r.msg))
					sleepCtx(ctx, s.every) // paced as a failed reopen: this server says it again on the next session
					return "", seq
				}
				s.ended(i, r.err, false)
				return "", seq
			case <-tick.C:
			}
			seq++
			pending = fmt.Sprintf("session %d message %d", i, seq)
		}
		wctx, cancel := context.WithTimeout(ctx, s.timeout)
		err := c.Write(wctx, websocket.MessageText, []byte(pending))
		cancel()
		if err != nil {
			if ctx.Err() != nil {
				return "", seq // the load is over, not the session: a write it cut short is no loss
			}
			s.ended(i, err, true)
			return pending, seq
		}
		select {
		case r := <-reads:
			if r.err != nil {
				s.ended(i, r.err, true)
				return pending, seq
			}
			if r.msg != pending {
				s.lost(fmt.Errorf("session %d: sent %q, got %q back", i, pending, r.msg))
				return "", seq
			}
			s.note(func(st *SessionStats) { st.Echoed++ })
			pending = ""
		case <-time.After(s.timeout):
			s.lost(fmt.Errorf("session %d: %q not answered within %s", i, pending, s.timeout))
			return "", seq
		case <-ctx.Done():
			return "", seq
		}
	}
}

// ended classifies the end of a session: a close frame from the server or a connection closed
// cleanly (EOF) is the server ending it, which the client survives by reopening; a reset or any
// other error is a failure.
func (s *sessions) ended(i int, err error, unanswered bool) {
	var ce websocket.CloseError
	switch {
	case errors.As(err, &ce), !errors.Is(err, syscall.ECONNRESET) && !errors.Is(err, syscall.EPIPE) &&
		(strings.Contains(err.Error(), "EOF") || strings.Contains(err.Error(), "use of closed")):
		s.note(func(st *SessionStats) { st.EndedClean++ })
	default:
		what := "reset"
		if unanswered {
			what = "reset with a message unanswered"
		}
		s.lost(fmt.Errorf("session %d: %s: %w", i, what, err))
	}
}

func sleepCtx(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
