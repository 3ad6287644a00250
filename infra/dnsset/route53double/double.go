// Package route53double is a local stand-in for the Amazon Route 53 API, for tests only: no AWS
// is reachable from where zero502 is built, so the real aws-sdk-go-v2 Route 53 client is pointed
// (BaseEndpoint) at this double instead. It speaks the real wire protocol, REST-XML of API
// version 2013-04-01 (paths /2013-04-01/…, XML bodies in the
// https://route53.amazonaws.com/doc/2013-04-01/ namespace, SigV4 for service route53, XML
// ErrorResponse documents with the documented codes and HTTP statuses, and Route 53's own
// <InvalidChangeBatch><Messages> document), for the calls zero502 makes:
//
//   - POST /2013-04-01/hostedzone/{Id}/rrset: ChangeResourceRecordSets. A batch is checked
//     whole and applied atomically, as Route 53 does: CREATE of an existing record, DELETE of a
//     missing one or with values that differ, a name outside the zone, mixing a simple record
//     with a multivalue or weighted one at the same name and type, all refused with
//     InvalidChangeBatch and nothing changed.
//   - GET /2013-04-01/change/{Id}: GetChange. A change is PENDING until Options.Propagation has
//     passed on the double's clock since it was submitted, then INSYNC.
//   - GET /2013-04-01/hostedzone/{Id}/rrset: ListResourceRecordSets, in Route 53's order (names
//     compared label by label from the right, then type, then set identifier), paginated with
//     maxitems and NextRecordName/NextRecordType/NextRecordIdentifier.
//
// It counts every call by operation so tests can prove a wait polled and a no-op changed nothing.
// What it shares with the ELBv2 double of the AWS wire (request IDs, the SigV4 check, the
// ErrorResponse document, the call counts) is package internal/testrig/awsdouble; this package
// keeps REST-XML routing, its documents and the hosted zones.
package route53double

import (
	"fmt"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// Namespace is the XML namespace of every Route 53 request and response body.
const Namespace = "https://route53.amazonaws.com/doc/2013-04-01/"

// Version is the path prefix of every Route 53 API call.
const Version = "/2013-04-01"

// Options configure a Server.
type Options struct {
	// Clock decides when a change is INSYNC. Default clock.Real.
	Clock clock.Clock
	// Propagation is how long a change stays PENDING after it was submitted. Zero: the first
	// GetChange already reports INSYNC.
	Propagation time.Duration
}

// Server is the Route 53 API double; it is an http.Handler (use it with httptest.NewServer).
type Server struct {
	clock       clock.Clock
	propagation time.Duration
	calls       awsdouble.Calls // by operation

	mu      sync.Mutex
	zones   map[string]*hostedZone // by ID
	changes map[string]*change     // by ID, without /change/
}

type hostedZone struct {
	id, name string
	rrsets   []RecordSet
}

type change struct {
	id, comment string
	submitted   time.Time
}

// New returns a double without hosted zones; add them with AddHostedZone.
func New(opts Options) *Server {
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &Server{
		clock: opts.Clock, propagation: opts.Propagation,
		zones: map[string]*hostedZone{}, changes: map[string]*change{},
	}
}

// AddHostedZone creates a public hosted zone for name with its SOA and NS records, as
// CreateHostedZone does, and returns its ID (Z…, without the /hostedzone/ prefix).
func (s *Server) AddHostedZone(name string) string {
	name = canonical(name)
	id := fmt.Sprintf("Z%020X", rand.Uint64()) // Route 53's shape: Z and 20 characters
	z := &hostedZone{id: id, name: name}
	z.rrsets = []RecordSet{
		{Name: name, Type: "NS", TTL: 172800, Values: []string{
			"ns-1.awsdns-01.org.", "ns-2.awsdns-02.co.uk.", "ns-3.awsdns-03.com.", "ns-4.awsdns-04.net."}},
		{Name: name, Type: "SOA", TTL: 900, Values: []string{
			"ns-1.awsdns-01.org. awsdns-hostmaster.amazon.com. 1 7200 900 1209600 86400"}},
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.zones[id] = z
	return id
}

// RecordSet is one resource record set as the double holds it.
type RecordSet struct {
	Name, Type, SetIdentifier string
	MultiValueAnswer          bool
	Weight                    *int64
	TTL                       int64
	Values                    []string
	HealthCheckID             string
}

// RecordSets returns the zone's record sets in Route 53's order.
func (s *Server) RecordSets(zoneID string) []RecordSet {
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil
	}
	return sortedRRSets(z.rrsets) // a copy: the caller cannot change the zone
}

// Calls is how many requests of operation (e.g. "GetChange") the double answered, successfully
// or not.
func (s *Server) Calls(operation string) int { return s.calls.Of(operation) }

// ServeHTTP routes one REST-XML request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	reqID := awsdouble.NewRequestID(w)
	path := strings.TrimPrefix(r.URL.Path, Version+"/")
	parts := strings.Split(path, "/")
	var op string
	switch {
	case len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset" && r.Method == http.MethodPost:
		op = "ChangeResourceRecordSets"
	case len(parts) == 3 && parts[0] == "hostedzone" && parts[2] == "rrset" && r.Method == http.MethodGet:
		op = "ListResourceRecordSets"
	case len(parts) == 2 && parts[0] == "change" && r.Method == http.MethodGet:
		op = "GetChange"
	default:
		writeError(w, reqID, awsdouble.Errorf(http.StatusNotFound, "UnknownOperationException",
			"no Route 53 operation for %s %s", r.Method, r.URL.Path))
		return
	}
	s.calls.Add(op)
	if !strings.HasPrefix(r.URL.Path, Version+"/") {
		writeError(w, reqID, awsdouble.Errorf(http.StatusNotFound, "UnknownOperationException",
			"path %s is not under API version %s", r.URL.Path, Version))
		return
	}
	if _, err := awsdouble.Authenticate(r, "route53", awsdouble.Errorf(http.StatusForbidden,
		"MissingAuthenticationTokenException", "Missing Authentication Token")); err != nil {
		writeError(w, reqID, err)
		return
	}
	var result any
	var err error
	switch op {
	case "ChangeResourceRecordSets":
		result, err = s.changeResourceRecordSets(parts[1], r)
	case "ListResourceRecordSets":
		result, err = s.listResourceRecordSets(parts[1], r.URL.Query())
	case "GetChange":
		result, err = s.getChange(parts[1])
	}
	if err != nil {
		writeError(w, reqID, err)
		return
	}
	writeResult(w, result)
}

func (s *Server) getChange(id string) (any, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.changes[id]
	if !ok {
		return nil, awsdouble.Errorf(http.StatusNotFound, "NoSuchChange",
			"A change with the specified change ID does not exist: %s", id)
	}
	return changeInfoAnswer("GetChange", s.changeInfo(c)), nil
}

// changeInfo is c's ChangeInfo now; s.mu is held.
func (s *Server) changeInfo(c *change) xmlChangeInfo {
	status := "PENDING"
	if !s.clock.Now().Before(c.submitted.Add(s.propagation)) {
		status = "INSYNC"
	}
	return xmlChangeInfo{Id: "/change/" + c.id, Status: status,
		SubmittedAt: c.submitted.UTC().Format("2006-01-02T15:04:05.000Z"), Comment: c.comment}
}
