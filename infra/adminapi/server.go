package adminapi

import (
	"fmt"
	"log"
	"net/http"
	"time"
)

// Limits bound what one client of a control listener (the LB's and the edge's admin, the mesh
// node's endpoint) may hold: a client that sends its head or body slowly, or keeps a
// connection idle, is closed once the limit passes; a body above MaxBody is refused 413.
type Limits struct {
	// ReadHeader bounds the reading of a request's head, Read the whole request with its body.
	ReadHeader, Read time.Duration
	// Idle bounds how long a kept-alive connection may wait for its next request.
	Idle time.Duration
	// MaxBody is the largest request body accepted, in bytes.
	MaxBody int64
}

// DefaultLimits are the limits every control listener runs with: a bulletin or an admin write
// is a few KiB sent at once by a program, so a client slower than this is not one of ours.
var DefaultLimits = Limits{ReadHeader: 5 * time.Second, Read: 30 * time.Second, Idle: 2 * time.Minute, MaxBody: 1 << 20}

// NewServer is the one http.Server of a control listener: h behind l's timeouts and body
// limit. errorLog may be nil (net/http's default).
func NewServer(h http.Handler, l Limits, errorLog *log.Logger) *http.Server {
	return &http.Server{
		Handler:           limitBody(l.MaxBody, h),
		ReadHeaderTimeout: l.ReadHeader,
		ReadTimeout:       l.Read,
		IdleTimeout:       l.Idle,
		ErrorLog:          errorLog,
	}
}

// limitBody refuses 413 a request whose Content-Length is above max before next sees it, and
// caps the body of any other (chunked) at max: a handler reading past it gets an
// *http.MaxBytesError, which it answers with bodyTooLarge.
func limitBody(max int64, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > max {
			bodyTooLarge(w, max)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, max)
		next.ServeHTTP(w, r)
	})
}

// bodyTooLarge answers 413 for a body above max bytes.
func bodyTooLarge(w http.ResponseWriter, max int64) {
	w.Header().Set("Connection", "close")
	http.Error(w, fmt.Sprintf("request body above %d bytes: send a smaller one", max), http.StatusRequestEntityTooLarge)
}
