package balancer

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/config"
	"github.com/zero502/zero502/infra/dnsset/route53set"
	"github.com/zero502/zero502/infra/dnsset/zonefile"
)

// recordSet is what the deployer needs of the edges' DNS A record set (balancer.kind dns): the
// zone file zero502 dns serve answers from (zonefile.Set), or a Route 53 hosted zone
// (route53set.Set).
type recordSet interface {
	// List returns the addresses in the set.
	List(ctx context.Context) ([]netip.Addr, error)
	// Add puts addr in the set and returns once the change is visible; an address already there
	// is left as it is.
	Add(ctx context.Context, addr netip.Addr) error
	// Remove takes addr out of the set and returns once the change is visible; an address not
	// there is not an error. The provider refuses to remove the last address.
	Remove(ctx context.Context, addr netip.Addr) error
	// TTL is how long resolvers may keep an answer.
	TTL() time.Duration
}

// DNSSet is the balancer of a tier of edges: their A record set. An edge is in rotation while
// its address is in the set. Draining it removes it from the set; it is drained once every
// resolver's cached answer has expired and the platform's monitor would have noticed it too:
// edge.dns_ttl + edge.check_interval × edge.unhealthy_threshold after the removal (I6 keeps
// edge.drain above that). The set has no live settings to compare (Settings wraps ErrNoView).
type DNSSet struct {
	name  string
	set   recordSet
	gone  time.Duration
	clock clock.Clock

	mu      sync.Mutex
	removed map[netip.Addr]time.Time // address → when the deployer removed it
}

var (
	_ Balancer = (*DNSSet)(nil)
	_ Rotation = (*DNSSet)(nil)
)

// NewDNSSet returns the rotation of the record set name held by set, with edge's numbers: the
// wait after a removal is the longer of edge.dns_ttl and the set's own TTL, plus the monitor's
// detection.
func NewDNSSet(name string, set recordSet, edge config.Edge, clk clock.Clock) *DNSSet {
	if clk == nil {
		clk = clock.Real{}
	}
	return &DNSSet{name: name, set: set, clock: clk, removed: map[netip.Addr]time.Time{},
		gone: max(edge.DNSTTL, set.TTL()) + edge.CheckInterval*time.Duration(edge.UnhealthyThreshold)}
}

// Name is "dns NAME".
func (s *DNSSet) Name() string { return "dns " + s.name }

// Gone is how long after its removal no client still connects to an edge: the TTL plus the
// monitor's detection.
func (s *DNSSet) Gone() time.Duration { return s.gone }

// recordAddr is the A record's address of target (host:port): its host.
func recordAddr(target string) (netip.Addr, error) {
	host, _, err := net.SplitHostPort(target)
	if err != nil {
		host = target
	}
	a, err := netip.ParseAddr(host)
	if err != nil || !a.Is4() {
		return netip.Addr{}, fmt.Errorf("edge target %q: an A record holds an IPv4 address; give the edge host one (hosts[].address)", target)
	}
	return a, nil
}

// TargetState is healthy and in rotation while target's address is in the set.
func (s *DNSSet) TargetState(ctx context.Context, target string) (TargetState, error) {
	addr, err := recordAddr(target)
	if err != nil {
		return TargetState{}, err
	}
	all, err := s.set.List(ctx)
	if err != nil {
		return TargetState{}, fmt.Errorf("%s: %w", s.Name(), err)
	}
	s.mu.Lock()
	at := s.removed[addr]
	s.mu.Unlock()
	if slices.Contains(all, addr) {
		return TargetState{State: "in the A set", InRotation: true}, nil
	}
	return TargetState{State: "out of the A set", Since: at}, nil
}

// Settings wraps ErrNoView: a record set has no health-check numbers to compare.
func (s *DNSSet) Settings(context.Context) (Settings, error) {
	return Settings{}, fmt.Errorf("%s: %w", s.Name(), ErrNoView)
}

// Add puts target's address in the set.
func (s *DNSSet) Add(ctx context.Context, target string) error {
	addr, err := recordAddr(target)
	if err != nil {
		return err
	}
	if err := s.set.Add(ctx, addr); err != nil {
		return fmt.Errorf("%s: add %s: %w", s.Name(), addr, err)
	}
	s.mu.Lock()
	delete(s.removed, addr)
	s.mu.Unlock()
	return nil
}

// Drain removes target's address from the set and starts its wait.
func (s *DNSSet) Drain(ctx context.Context, target string) error {
	addr, err := recordAddr(target)
	if err != nil {
		return err
	}
	if err := s.set.Remove(ctx, addr); err != nil {
		return fmt.Errorf("%s: remove %s: %w", s.Name(), addr, err)
	}
	s.mu.Lock()
	if _, ok := s.removed[addr]; !ok {
		s.removed[addr] = s.clock.Now()
	}
	s.mu.Unlock()
	return nil
}

// Drained is true once Gone has passed since the deployer removed target's address. An address
// the deployer did not remove (it was never in the set) has nothing to wait for.
func (s *DNSSet) Drained(ctx context.Context, target string) (bool, error) {
	addr, err := recordAddr(target)
	if err != nil {
		return false, err
	}
	s.mu.Lock()
	at, ok := s.removed[addr]
	s.mu.Unlock()
	if !ok {
		all, err := s.set.List(ctx)
		if err != nil {
			return false, fmt.Errorf("%s: %w", s.Name(), err)
		}
		return !slices.Contains(all, addr), nil
	}
	return s.clock.Now().Sub(at) >= s.gone, nil
}

// Remove is Drain without the wait: the address leaves the set.
func (s *DNSSet) Remove(ctx context.Context, target string) error {
	return s.Drain(ctx, target)
}

// envRoute53Endpoint names the environment variable that, when set, replaces Route 53's endpoint:
// a local double in tests.
const envRoute53Endpoint = "ZERO502_ROUTE53_ENDPOINT"

// dnsSetFor builds the DNSSet of balancer.record: the zone file (zero502 dns serve answers from
// it), or the Route 53 hosted zone (the AWS SDK's default credential chain; endpoint from
// envRoute53Endpoint when set, for a local double). Records the deployer adds get
// edge.dns_ttl.
func dnsSetFor(cfg *config.Config) (Balancer, error) {
	r := cfg.Balancer.Record
	ttl := cfg.Edge.DNSTTL
	if r.ZoneFile != "" {
		set, err := zonefile.NewSet(r.ZoneFile, r.Name, zonefile.Options{TTL: ttl})
		if err != nil {
			return nil, fmt.Errorf("balancer.record: %w", err)
		}
		return NewDNSSet(set.Name(), set, cfg.Edge, nil), nil
	}
	api, err := route53set.NewClient(context.Background(), route53set.ClientOptions{Endpoint: os.Getenv(envRoute53Endpoint)})
	if err != nil {
		return nil, fmt.Errorf("balancer.record.route53_zone_id %s: %w", r.Route53ZoneID, err)
	}
	set, err := route53set.New(api, r.Route53ZoneID, r.Name, route53set.Options{TTL: ttl})
	if err != nil {
		return nil, fmt.Errorf("balancer.record: %w", err)
	}
	return NewDNSSet(set.Name(), set, cfg.Edge, nil), nil
}
