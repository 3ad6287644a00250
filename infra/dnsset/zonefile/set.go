package zonefile

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"slices"
	"time"

	"github.com/miekg/dns"

	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/hostlock"
	"github.com/zero502/zero502/infra/spec"
)

// lockRetry is how often a writer retries a held zone lock.
const lockRetry = 20 * time.Millisecond

// Options adjust a Set.
type Options struct {
	// TTL of the A records Add writes, and the time Remove promises resolvers may still hold
	// the old answer. Zero is dnsset.DefaultTTL.
	TTL time.Duration
	// Origin is the apex of a zone file that Add creates because none exists yet. Empty is the
	// record name itself (a zone that holds just the A set). An existing file keeps its apex.
	Origin string
}

// Set is the A set of one name in a zone file. Add and Remove are read-modify-write under an
// exclusive flock on Path+".lock", taken as infra/hostlock takes the host lock (two writers never
// lose each other's change, and no other user can hold it), and replace the file atomically
// (temp file, fsync, rename), so a reader sees either the old or the new zone.
// A change is visible to Server at the next query after the write returns.
type Set struct {
	path, name, origin string
	ttl                time.Duration
}

// NewSet checks its arguments (nothing is read yet: the file may not exist before the first Add).
func NewSet(path, name string, opts Options) (*Set, error) {
	if path == "" {
		return nil, fmt.Errorf("zone file path is empty: give --zone FILE")
	}
	n, err := dnsset.Name("name", name)
	if err != nil {
		return nil, err
	}
	ttl, err := dnsset.TTL("ttl", opts.TTL)
	if err != nil {
		return nil, err
	}
	origin := n
	if opts.Origin != "" {
		if origin, err = dnsset.Name("origin", opts.Origin); err != nil {
			return nil, err
		}
		if !dns.IsSubDomain(origin, n) {
			return nil, fmt.Errorf("name %s is not inside origin %s: the origin is the zone's apex, the name or one of its parents", n, origin)
		}
	}
	return &Set{path: path, name: n, origin: origin, ttl: ttl}, nil
}

// Name is the record name, fully qualified.
func (s *Set) Name() string { return s.name }

// TTL is the TTL Add writes (unless the records already carry a longer one) and the longest
// TTL a record Remove takes out can have been handed to resolvers with: the wait after a Remove.
func (s *Set) TTL() time.Duration { return s.ttl }

// List returns the set's addresses, sorted. A missing file is an error: nothing serves it.
func (s *Set) List(ctx context.Context) ([]netip.Addr, error) {
	addrs, _, err := s.Records(ctx)
	return addrs, err
}

// Records returns the set's addresses, sorted, and the TTL their records carry (zero when there
// are none): how long a resolver may keep the answer it was handed, longer than TTL when the
// records already carried a longer one (Add never lowers it). A missing file is an error.
func (s *Set) Records(ctx context.Context) ([]netip.Addr, time.Duration, error) {
	if err := ctx.Err(); err != nil {
		return nil, 0, err
	}
	z, err := Load(s.path)
	if err != nil {
		return nil, 0, err
	}
	if err := z.checkName(s.name); err != nil {
		return nil, 0, fmt.Errorf("zone file %s: %w", s.path, err)
	}
	addrs, ttl := z.A(s.name)
	return addrs, ttl, nil
}

// Add puts addr in the set; it is a no-op when addr is there with at least the set's TTL. It
// creates the zone file (apex Options.Origin) when there is none. All of the name's A records
// get one TTL (an RRset has one, RFC 2181), the longer of the set's and the one they carry: an
// Add never lowers a TTL, since resolvers may keep the answer they were handed for as long as
// it said, and Remove's check (dnsset.CheckCachedTTL) must see that TTL, not a lower one
// written since.
func (s *Set) Add(ctx context.Context, addr netip.Addr) error {
	if err := dnsset.CheckAddr("address", addr); err != nil {
		return err
	}
	return s.edit(ctx, true, func(z *Zone, have []netip.Addr, haveTTL time.Duration) ([]netip.Addr, error) {
		if slices.Contains(have, addr) && haveTTL >= s.ttl {
			return nil, nil
		}
		return append(have, addr), nil
	})
}

// Remove takes addr out of the set; it is a no-op when addr is not there. It refuses to remove
// the last address (dnsset.ErrLastAddress) and an address whose record carries a TTL longer
// than the set's (resolvers would outlast the rollout's wait). As Add never lowers a TTL, the
// TTL on file is the longest any resolver got from zero502's writes (a TTL lowered by hand is
// the hand's to wait out).
func (s *Set) Remove(ctx context.Context, addr netip.Addr) error {
	if err := dnsset.CheckAddr("address", addr); err != nil {
		return err
	}
	return s.edit(ctx, false, func(z *Zone, have []netip.Addr, haveTTL time.Duration) ([]netip.Addr, error) {
		change, err := dnsset.CheckRemove(s.name, have, addr)
		if err != nil || !change {
			return nil, err
		}
		if err := dnsset.CheckCachedTTL(s.name, addr, haveTTL, s.ttl); err != nil {
			return nil, err
		}
		return slices.DeleteFunc(slices.Clone(have), func(a netip.Addr) bool { return a == addr }), nil
	})
}

// lock takes the zone's lock, Path+".lock", waiting until ctx ends. It is judged and taken as
// infra/hostlock takes the host lock: opened never through a symlink, made 0600 (flock needs only
// read access, so a lock another user could open, that user could hold for ever, and every change
// of the zone would wait on it), in a directory only its owner can write; one that breaks that
// rule is refused naming the lock, its owner or mode, and what to change.
func (s *Set) lock(ctx context.Context) (*hostlock.Lock, error) {
	path := s.path + ".lock"
	me := hostlock.Holder{Who: spec.Holder(), Command: "zero502 dns: change " + s.name + " in " + s.path}
	lock, err := hostlock.Acquire(ctx, path, me, lockRetry, nil)
	switch {
	case err == nil:
		return lock, nil
	case errors.Is(err, hostlock.ErrHeld) || ctx.Err() != nil:
		return nil, fmt.Errorf("zone file %s: waiting for its lock: %w; try again once its holder is done", s.path, err)
	default:
		return nil, fmt.Errorf("zone file %s: its lock %s is not taken: %w (for a zone file: keep it in a directory only "+
			"root and this user can write, where its lock is made)", s.path, path, err)
	}
}

// edit runs change on the current A set under the zone lock and writes the result, unless
// change returns nil (nothing to do), with the longer of the set's TTL and the one on file (a
// TTL is never lowered). create allows a missing file to start as a new zone.
func (s *Set) edit(ctx context.Context, create bool,
	change func(z *Zone, have []netip.Addr, haveTTL time.Duration) ([]netip.Addr, error)) error {
	lock, err := s.lock(ctx)
	if err != nil {
		return err
	}
	defer lock.Release()

	z, err := Load(s.path)
	switch {
	case err != nil && create && errors.Is(err, fs.ErrNotExist):
		z = New(s.origin, s.ttl)
	case err != nil:
		return err
	}
	if err := z.checkName(s.name); err != nil {
		return fmt.Errorf("zone file %s: %w", s.path, err)
	}
	have, haveTTL := z.A(s.name)
	want, err := change(z, have, haveTTL)
	if err != nil || want == nil {
		return err
	}
	z.SetA(s.name, want, max(s.ttl, haveTTL))
	if _, why := cnameConflict(z.Records); why != "" {
		return fmt.Errorf("zone file %s: not changed: %s", s.path, why)
	}
	if err := spec.WriteAtomic(s.path, z.Bytes()); err != nil {
		return fmt.Errorf("zone file %s: %w", s.path, err)
	}
	return nil
}
