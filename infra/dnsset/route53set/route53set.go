// Package route53set keeps the edges' A set in an Amazon Route 53 hosted zone, through
// aws-sdk-go-v2. The set is one multivalue answer record per address (SetIdentifier = the
// address, one value, health checks off): each address is added and removed on its own with
// ChangeResourceRecordSets (UPSERT, DELETE), without rewriting the others, so two changes never
// race over one record's value list, and Route 53 answers a query with up to eight of the
// addresses, picked at random (health checks are off: zero502's rollout, not Route 53, decides
// who is in the set). Weighted records would also work, but weights invite a second meaning
// (traffic shares) that the rollout does not keep.
//
// A change is visible when GetChange reports INSYNC: every Route 53 authoritative server
// answers with it. Add and Remove return only then, polling GetChange with the project's
// backoff on an injected clock. Resolvers that cached the previous answer keep it for up to
// the record's TTL more, which the rollout waits out.
package route53set

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/dnsset"
)

// route53API is what Set needs of Route 53; *route53.Client satisfies it. The IAM policy needs
// route53:ChangeResourceRecordSets and route53:ListResourceRecordSets on the hosted zone and
// route53:GetChange on change/*.
type route53API interface {
	ChangeResourceRecordSets(context.Context, *route53.ChangeResourceRecordSetsInput, ...func(*route53.Options)) (*route53.ChangeResourceRecordSetsOutput, error)
	GetChange(context.Context, *route53.GetChangeInput, ...func(*route53.Options)) (*route53.GetChangeOutput, error)
	ListResourceRecordSets(context.Context, *route53.ListResourceRecordSetsInput, ...func(*route53.Options)) (*route53.ListResourceRecordSetsOutput, error)
}

var _ route53API = (*route53.Client)(nil)

// Defaults of Options.
const (
	defaultInsyncTimeout = 5 * time.Minute
	defaultPollBase      = 2 * time.Second
	defaultPollCap       = 15 * time.Second
)

// Options adjust a Set.
type Options struct {
	// TTL of the records Add writes and the time Remove promises resolvers may still hold the
	// old answer. Zero is dnsset.DefaultTTL.
	TTL time.Duration
	// Clock paces the GetChange polls and the INSYNC deadline. Default clock.Real.
	Clock clock.Clock
	// Poll is the wait between GetChange calls. Zero fields: defaultPollBase, defaultPollCap.
	Poll backoff.Backoff
	// InsyncTimeout bounds the wait for INSYNC (Route 53 usually needs under 60 s). Zero is
	// defaultInsyncTimeout.
	InsyncTimeout time.Duration
	// PageSize is ListResourceRecordSets' maxitems. Zero is Route 53's default (300).
	PageSize int32
}

// Set is the A set of one name in one hosted zone.
type Set struct {
	api     route53API
	zoneID  string
	name    string
	ttl     time.Duration
	clock   clock.Clock
	poll    backoff.Backoff
	timeout time.Duration
	page    int32
}

// New checks its arguments; nothing is called yet.
func New(api route53API, zoneID, name string, opts Options) (*Set, error) {
	if zoneID == "" {
		return nil, fmt.Errorf("hosted zone ID is empty: give the Route 53 hosted zone's ID, e.g. Z0123456789ABCDEFGHIJ " +
			"(aws route53 list-hosted-zones-by-name shows it)")
	}
	n, err := dnsset.Name("name", name)
	if err != nil {
		return nil, err
	}
	ttl, err := dnsset.TTL("ttl", opts.TTL)
	if err != nil {
		return nil, err
	}
	if opts.PageSize < 0 || opts.PageSize > 300 {
		return nil, fmt.Errorf("page size %d is outside [1, 300] (ListResourceRecordSets' maxitems); 0 is Route 53's default", opts.PageSize)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Poll.Base == 0 {
		opts.Poll.Base = defaultPollBase
	}
	if opts.Poll.Cap == 0 {
		opts.Poll.Cap = defaultPollCap
	}
	if opts.InsyncTimeout == 0 {
		opts.InsyncTimeout = defaultInsyncTimeout
	}
	return &Set{api: api, zoneID: zoneID, name: n, ttl: ttl, clock: opts.Clock, poll: opts.Poll,
		timeout: opts.InsyncTimeout, page: opts.PageSize}, nil
}

// Name is the record name, fully qualified.
func (s *Set) Name() string { return s.name }

// TTL is the TTL Add writes (unless the set already holds a longer one) and the longest TTL a
// record Remove takes out can have been handed to resolvers with: the wait after a Remove.
func (s *Set) TTL() time.Duration { return s.ttl }

// member is one address of the set and the record that holds it.
type member struct {
	addr   netip.Addr
	record types.ResourceRecordSet
}

// recordTTL is the TTL r carries.
func recordTTL(r types.ResourceRecordSet) time.Duration {
	return time.Duration(aws.ToInt64(r.TTL)) * time.Second
}

// List returns the set's addresses, sorted.
func (s *Set) List(ctx context.Context) ([]netip.Addr, error) {
	addrs, _, err := s.Records(ctx)
	return addrs, err
}

// Records returns the set's addresses, sorted, and the longest TTL their records carry (zero
// when there are none): how long a resolver may keep the answer it was handed, longer than TTL
// when the set already held a longer one (Add never lowers it).
func (s *Set) Records(ctx context.Context) ([]netip.Addr, time.Duration, error) {
	members, err := s.members(ctx)
	if err != nil {
		return nil, 0, err
	}
	var out []netip.Addr
	var ttl time.Duration
	for _, m := range members {
		out = append(out, m.addr)
		ttl = max(ttl, recordTTL(m.record))
	}
	return dnsset.Sorted(out), ttl, nil
}

// members reads the name's A records, page by page, starting at the name.
func (s *Set) members(ctx context.Context) ([]member, error) {
	in := &route53.ListResourceRecordSetsInput{
		HostedZoneId:    aws.String(s.zoneID),
		StartRecordName: aws.String(s.name),
		StartRecordType: types.RRTypeA,
	}
	if s.page > 0 {
		in.MaxItems = aws.Int32(s.page)
	}
	pages := route53.NewListResourceRecordSetsPaginator(s.api, in)
	var out []member
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("route 53 zone %s: listing %s A records: %w", s.zoneID, s.name, err)
		}
		for _, r := range page.ResourceRecordSets {
			if aws.ToString(r.Name) != s.name || r.Type != types.RRTypeA {
				return out, nil // sorted by name then type: past our records
			}
			if r.SetIdentifier == nil || !aws.ToBool(r.MultiValueAnswer) {
				return nil, fmt.Errorf("route 53 zone %s: %s has an A record that is not a multivalue answer "+
					"record (set identifier %q); zero502 keeps the set as one multivalue record per address. "+
					"Delete that record (aws route53 change-resource-record-sets) and add the addresses with zero502",
					s.zoneID, s.name, aws.ToString(r.SetIdentifier))
			}
			for _, v := range r.ResourceRecords {
				a, err := dnsset.Addr("record value", aws.ToString(v.Value))
				if err != nil {
					return nil, fmt.Errorf("route 53 zone %s: %s set %s: %w", s.zoneID, s.name, aws.ToString(r.SetIdentifier), err)
				}
				out = append(out, member{addr: a, record: r})
			}
		}
	}
	return out, nil
}

// Add puts addr in the set and returns once Route 53 reports the change INSYNC. It is a no-op
// (no change submitted) when addr is there with at least the set's TTL. An Add never lowers a
// TTL: resolvers may keep the answer they were handed for as long as it said, and Remove's
// check (dnsset.CheckCachedTTL) must see that TTL, not a lower one written since. So the record
// it writes gets the longer of the set's TTL and the longest TTL already in the set (the
// addresses are answered together, as one RRset with one TTL, RFC 2181).
func (s *Set) Add(ctx context.Context, addr netip.Addr) error {
	if err := dnsset.CheckAddr("address", addr); err != nil {
		return err
	}
	members, err := s.members(ctx)
	if err != nil {
		return err
	}
	id := addr.String()
	ttl := s.ttl
	for _, m := range members {
		have := recordTTL(m.record)
		ttl = max(ttl, have)
		if m.addr == addr {
			if have >= s.ttl {
				return nil
			}
			id = aws.ToString(m.record.SetIdentifier)
		}
	}
	rec := types.ResourceRecordSet{
		Name: aws.String(s.name), Type: types.RRTypeA, SetIdentifier: aws.String(id),
		MultiValueAnswer: aws.Bool(true), TTL: aws.Int64(int64(ttl / time.Second)),
		ResourceRecords: []types.ResourceRecord{{Value: aws.String(addr.String())}},
	}
	return s.change(ctx, types.ChangeActionUpsert, rec, "add "+addr.String())
}

// Remove takes addr out of the set and returns once Route 53 reports the change INSYNC. It is a
// no-op when addr is not there; it refuses to remove the last address (dnsset.ErrLastAddress)
// and a record whose TTL is longer than the set's (as Add never lowers a TTL, the record's TTL
// is the longest any resolver got from zero502's writes). A DELETE refused as "not found" (the SDK
// resent one whose answer was lost) is done when a second listing no longer holds addr; that
// change cannot be polled for INSYNC, its ID being in the lost answer.
func (s *Set) Remove(ctx context.Context, addr netip.Addr) error {
	if err := dnsset.CheckAddr("address", addr); err != nil {
		return err
	}
	members, err := s.members(ctx)
	if err != nil {
		return err
	}
	var addrs []netip.Addr
	var rec *types.ResourceRecordSet
	for _, m := range members {
		addrs = append(addrs, m.addr)
		if m.addr == addr {
			rec = &m.record
		}
	}
	change, err := dnsset.CheckRemove(s.name, addrs, addr)
	if err != nil || !change {
		return err
	}
	if len(rec.ResourceRecords) != 1 {
		return fmt.Errorf("route 53 zone %s: %s set %s holds %d addresses; removing %s would take them all out. "+
			"Split it into one multivalue record per address first", s.zoneID, s.name,
			aws.ToString(rec.SetIdentifier), len(rec.ResourceRecords), addr)
	}
	if err := dnsset.CheckCachedTTL(s.name, addr, recordTTL(*rec), s.ttl); err != nil {
		return err
	}
	// DELETE must repeat the record exactly as it is (TTL, values, routing), or Route 53
	// refuses it; it is the record just listed.
	err = s.change(ctx, types.ChangeActionDelete, *rec, "remove "+addr.String())
	if !deleteNotFound(err) {
		return err
	}
	// Route 53 may have applied the DELETE and lost its answer: the SDK's retryer then resent
	// it, and Route 53 refused the repeat as "not found". If the address has left the set, the
	// removal is done. Its change ID was in the lost answer, so there is no change to poll for
	// INSYNC; Route 53 propagates within about 60 s, and the deployer's TTL wait starts now,
	// after the first attempt.
	members, lerr := s.members(ctx)
	if lerr != nil {
		return fmt.Errorf("%w; listing the set again to see whether an earlier attempt removed %s: %w", err, addr, lerr)
	}
	for _, m := range members {
		if m.addr == addr {
			return err
		}
	}
	return nil
}

// deleteNotFound reports whether err is Route 53 refusing a DELETE because the record is not
// there (InvalidChangeBatch "Tried to delete resource record set … but it was not found").
func deleteNotFound(err error) bool {
	var bad *types.InvalidChangeBatch
	if !errors.As(err, &bad) {
		return false
	}
	const notFound = "but it was not found"
	for _, m := range bad.Messages {
		if strings.Contains(m, notFound) {
			return true
		}
	}
	return strings.Contains(bad.ErrorMessage(), notFound)
}

// change submits one change and waits until it is INSYNC.
func (s *Set) change(ctx context.Context, action types.ChangeAction, rec types.ResourceRecordSet, what string) error {
	out, err := s.api.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(s.zoneID),
		ChangeBatch: &types.ChangeBatch{
			Comment: aws.String("zero502 dns: " + what + " (" + s.name + ")"),
			Changes: []types.Change{{Action: action, ResourceRecordSet: &rec}},
		},
	})
	if err != nil {
		var bad *types.InvalidChangeBatch
		if errors.As(err, &bad) {
			return fmt.Errorf("route 53 zone %s: %s %s refused: %v: %w", s.zoneID, s.name, what, bad.Messages, err)
		}
		return fmt.Errorf("route 53 zone %s: %s %s: %w", s.zoneID, s.name, what, err)
	}
	return s.waitInsync(ctx, out.ChangeInfo, what)
}

// waitInsync polls GetChange until the change is INSYNC, ctx ends or InsyncTimeout passes.
func (s *Set) waitInsync(ctx context.Context, info *types.ChangeInfo, what string) error {
	id := aws.ToString(info.Id)
	deadline := s.clock.Now().Add(s.timeout)
	for polls := 0; info.Status != types.ChangeStatusInsync; polls++ {
		if !s.clock.Now().Before(deadline) {
			return fmt.Errorf("route 53 change %s (%s %s) still %s after %s; Route 53 usually propagates within "+
				"60 s: check its status with aws route53 get-change --id %s before retrying",
				id, s.name, what, info.Status, s.timeout, id)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("route 53 change %s (%s %s) not INSYNC yet: %w", id, s.name, what, ctx.Err())
		case <-s.clock.After(s.poll.Delay(polls)):
		}
		out, err := s.api.GetChange(ctx, &route53.GetChangeInput{Id: aws.String(id)})
		if err != nil {
			return fmt.Errorf("route 53 change %s (%s %s): %w", id, s.name, what, err)
		}
		info = out.ChangeInfo
	}
	return nil
}

// ClientOptions adjust how NewClient builds the SDK client.
type ClientOptions struct {
	// Endpoint, when set, replaces Route 53's global endpoint (BaseEndpoint): the tests' double.
	Endpoint string
	// Credentials, when set, replace the SDK's default credential chain (tests use static ones).
	Credentials aws.CredentialsProvider
}

// NewClient builds the Route 53 client: credentials from the SDK's default chain (environment,
// shared profile, web identity, IMDS) unless opts.Credentials is set. Route 53 is global; its
// requests are signed for us-east-1 whatever the profile's region.
func NewClient(ctx context.Context, opts ClientOptions) (*route53.Client, error) {
	load := []func(*awsconfig.LoadOptions) error{awsconfig.WithRegion("us-east-1")}
	if opts.Credentials != nil {
		load = append(load, awsconfig.WithCredentialsProvider(opts.Credentials))
	}
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, load...)
	if err != nil {
		return nil, fmt.Errorf("loading AWS configuration (credentials): %w", err)
	}
	return route53.NewFromConfig(awsCfg, func(o *route53.Options) {
		if opts.Endpoint != "" {
			o.BaseEndpoint = aws.String(opts.Endpoint)
		}
	}), nil
}
