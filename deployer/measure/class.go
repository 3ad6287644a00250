package measure

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
)

// Class is the outcome of one request, as a user would feel it.
type Class string

// The classes, in table order. Only OK and Health503 are not failures.
const (
	OK        Class = "ok"         // 2xx or 3xx
	Health503 Class = "health_503" // a 503 from the health endpoint: the drain doing its work
	C4xx      Class = "4xx"        // the request was refused as bad: never expected from this load
	C502      Class = "502"        // the balancer got nothing usable from the backend
	C503      Class = "503"        // a 503 on a real path: no backend would take it
	C504      Class = "504"        // the backend did not answer in time
	C5xx      Class = "other_5xx"  // any other 5xx
	Refused   Class = "refused"    // transport: connection refused
	Reset     Class = "reset"      // transport: connection reset or closed before a response
	Timeout   Class = "timeout"    // transport: no response within the request timeout
	ErrOther  Class = "error"      // transport: anything else
)

// Classes lists every class in table order.
var Classes = []Class{OK, Health503, C4xx, C502, C503, C504, C5xx, Refused, Reset, Timeout, ErrOther}

// Failure reports whether c is a request that went nowhere (everything but OK and Health503).
func (c Class) Failure() bool { return c != OK && c != Health503 }

// classify returns the class of a request of kind that ended with status (when err is nil) or
// with the transport error err. Only a health check's 503 is the drain at work: one a user's
// request got is a failure, whatever its path.
func classify(kind string, status int, err error) Class {
	if err != nil {
		return classifyErr(err)
	}
	switch {
	case status < 400:
		return OK
	case status == http.StatusServiceUnavailable && kind == KindHealth:
		return Health503
	case status < 500:
		return C4xx
	case status == http.StatusBadGateway:
		return C502
	case status == http.StatusServiceUnavailable:
		return C503
	case status == http.StatusGatewayTimeout:
		return C504
	}
	return C5xx
}

func classifyErr(err error) Class {
	var ne net.Error
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return Refused
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case errors.Is(err, syscall.ECONNRESET), errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		strings.Contains(err.Error(), "server closed"), strings.Contains(err.Error(), "connection reset"):
		return Reset
	}
	return ErrOther
}
