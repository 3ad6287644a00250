package route53set_test

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/zero502/zero502/infra/backoff"
	"github.com/zero502/zero502/infra/clock"
	"github.com/zero502/zero502/infra/dnsset"
	"github.com/zero502/zero502/infra/dnsset/route53double"
	"github.com/zero502/zero502/infra/dnsset/route53set"
)

const name = "edge.example.test."

type fixture struct {
	double *route53double.Server
	client *route53.Client
	zone   string
}

// start runs the double on loopback and builds the real SDK client against it.
func start(t *testing.T, opts route53double.Options) fixture {
	t.Helper()
	d := route53double.New(opts)
	srv := httptest.NewServer(d)
	t.Cleanup(srv.Close)
	client, err := route53set.NewClient(context.Background(), route53set.ClientOptions{
		Endpoint:    srv.URL,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{double: d, client: client, zone: d.AddHostedZone("example.test")}
}

func (f fixture) set(t *testing.T, opts route53set.Options) *route53set.Set {
	t.Helper()
	if opts.Poll.Base == 0 {
		opts.Poll = backoff.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond}
	}
	s, err := route53set.New(f.client, "/hostedzone/"+f.zone, name, opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func addrs(ss ...string) []netip.Addr {
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func TestAddListRemoveThroughTheRealSDK(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	s := f.set(t, route53set.Options{TTL: 30 * time.Second})
	for _, a := range addrs("192.0.2.3", "192.0.2.1", "192.0.2.2") {
		if err := s.Add(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	got, err := s.List(ctx)
	if err != nil || !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2", "192.0.2.3")) {
		t.Fatalf("List = %v, %v", got, err)
	}
	// The records are what the package documents: one multivalue record per address, health
	// checks off, the set's TTL.
	var a []route53double.RecordSet
	for _, r := range f.double.RecordSets(f.zone) {
		if r.Type == "A" {
			a = append(a, r)
		}
	}
	if len(a) != 3 {
		t.Fatalf("double holds %d A record sets, want 3: %+v", len(a), a)
	}
	for _, r := range a {
		if !r.MultiValueAnswer || r.SetIdentifier != r.Values[0] || len(r.Values) != 1 || r.TTL != 30 || r.HealthCheckID != "" {
			t.Fatalf("record %+v: want multivalue, identifier = its one value, TTL 30, no health check", r)
		}
	}
	if err := s.Remove(ctx, netip.MustParseAddr("192.0.2.2")); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.List(ctx); !slices.Equal(got, addrs("192.0.2.1", "192.0.2.3")) {
		t.Fatalf("after Remove: %v", got)
	}
}

func TestAddAndRemoveAreIdempotentAndSubmitNothingTwice(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	s := f.set(t, route53set.Options{})
	a, b := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2")
	for _, x := range []netip.Addr{a, b} {
		if err := s.Add(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	changes := f.double.Calls("ChangeResourceRecordSets")
	if err := s.Add(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, a); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ctx, a); err != nil {
		t.Fatalf("second Remove: %v", err)
	}
	if got := f.double.Calls("ChangeResourceRecordSets") - changes; got != 1 {
		t.Fatalf("Add of a present address and Remove of an absent one submitted %d changes, want only the real Remove", got)
	}
}

func TestAddWaitsForInsync(t *testing.T) {
	ctx := context.Background()
	start0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	fake := clock.NewFake(start0)
	const propagation = 40 * time.Second
	f := start(t, route53double.Options{Clock: fake, Propagation: propagation})
	s := f.set(t, route53set.Options{Clock: fake, Poll: backoff.Backoff{Base: 2 * time.Second, Cap: 10 * time.Second}})
	done := make(chan error, 1)
	go func() { done <- s.Add(ctx, netip.MustParseAddr("192.0.2.7")) }()

	deadline := time.Now().Add(10 * time.Second)
	for fake.Now().Sub(start0) < 2*propagation {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			elapsed := fake.Now().Sub(start0)
			if elapsed < propagation {
				t.Fatalf("Add returned after %s of fake time, before the change was INSYNC (%s)", elapsed, propagation)
			}
			if n := f.double.Calls("GetChange"); n < 2 {
				t.Fatalf("GetChange called %d times, want polls while PENDING and one that saw INSYNC", n)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Add neither waited on the clock nor returned within 10s")
		}
		if fake.Waiters() > 0 {
			fake.Advance(10 * time.Second) // the poll cap: every poll wait is due
		} else {
			time.Sleep(time.Millisecond) // let the goroutine reach its next wait (polling, not timing)
		}
	}
	t.Fatalf("Add did not return %s of fake time after a %s propagation", 2*propagation, propagation)
}

func TestInsyncTimeoutSaysWhatToCheck(t *testing.T) {
	ctx := context.Background()
	fake := clock.NewFake(time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC))
	f := start(t, route53double.Options{Clock: fake, Propagation: time.Hour})
	s := f.set(t, route53set.Options{Clock: fake, InsyncTimeout: 30 * time.Second,
		Poll: backoff.Backoff{Base: time.Second, Cap: 5 * time.Second}})
	done := make(chan error, 1)
	go func() { done <- s.Add(ctx, netip.MustParseAddr("192.0.2.7")) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case err := <-done:
			if err == nil || !strings.Contains(err.Error(), "still PENDING after 30s") || !strings.Contains(err.Error(), "get-change") {
				t.Fatalf("Add with a change that never syncs: %v", err)
			}
			return
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("Add did not give up within 10s")
		}
		if fake.Waiters() > 0 {
			fake.Advance(5 * time.Second)
		} else {
			time.Sleep(time.Millisecond)
		}
	}
}

func TestRemovingTheLastAddressIsRefusedBeforeAnyChange(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	s := f.set(t, route53set.Options{})
	only := netip.MustParseAddr("192.0.2.9")
	if err := s.Add(ctx, only); err != nil {
		t.Fatal(err)
	}
	changes := f.double.Calls("ChangeResourceRecordSets")
	err := s.Remove(ctx, only)
	if !errors.Is(err, dnsset.ErrLastAddress) || !strings.Contains(err.Error(), "192.0.2.9") {
		t.Fatalf("Remove of the last address: %v, want ErrLastAddress naming it", err)
	}
	if f.double.Calls("ChangeResourceRecordSets") != changes {
		t.Fatal("a refused Remove submitted a change")
	}
}

// An Add never lowers a TTL. Resolvers were handed 192.0.2.1 at TTL 300; re-adding it with a
// 60 s set must not UPSERT it at 60, or Remove's cached-TTL check would pass at once while
// resolvers keep the address for up to 300 s. A new address joins at the longest TTL in the set.
func TestAddNeverLowersATTLSoRemoveStillSeesWhatResolversHold(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	_, err := f.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(f.zone),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionCreate,
			ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA, SetIdentifier: aws.String("192.0.2.1"),
				MultiValueAnswer: aws.Bool(true), TTL: aws.Int64(300),
				ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := f.set(t, route53set.Options{TTL: 60 * time.Second})
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.2")); err != nil {
		t.Fatal(err)
	}
	changes := f.double.Calls("ChangeResourceRecordSets")
	if err := s.Add(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatal(err)
	}
	if got := f.double.Calls("ChangeResourceRecordSets") - changes; got != 0 {
		t.Errorf("re-adding an address held at TTL 300 with a 60 s set submitted %d changes, want none", got)
	}
	for _, r := range f.double.RecordSets(f.zone) {
		if r.Type == "A" && r.TTL != 300 {
			t.Errorf("record %s: TTL %d, want 300 (never lowered; a new address joins at the set's longest)", r.SetIdentifier, r.TTL)
		}
	}
	if got, ttl, err := s.Records(ctx); err != nil || !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2")) || ttl != 300*time.Second {
		t.Errorf("Records after the Adds of a 60 s set: %v at TTL %s, %v; want both at 5m0s, the TTL resolvers may hold", got, ttl, err)
	}
	for _, a := range addrs("192.0.2.1", "192.0.2.2") {
		if err := s.Remove(ctx, a); err == nil || !strings.Contains(err.Error(), "TTL 5m0s, longer than the 1m0s") {
			t.Fatalf("Remove of %s, served at TTL 300 s, with a 60 s set: %v; want the cached-TTL refusal", a, err)
		}
	}
	if got, _ := s.List(ctx); !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2")) {
		t.Fatalf("after refused Removes: %v, want both addresses", got)
	}
}

func TestListFollowsPagination(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	// Records before and after ours in Route 53's order, so the listing must start at the name
	// and stop past it.
	seed := f.set(t, route53set.Options{})
	var want []netip.Addr
	for i := 1; i <= 7; i++ {
		a := netip.AddrFrom4([4]byte{198, 51, 100, byte(i)})
		want = append(want, a)
		if err := seed.Add(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	for _, other := range []string{"a.example.test.", "zz.example.test.", "edge.example.test.sub.example.test."} {
		_, err := f.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
			HostedZoneId: aws.String(f.zone),
			ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionCreate,
				ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String(other), Type: types.RRTypeA, TTL: aws.Int64(60),
					ResourceRecords: []types.ResourceRecord{{Value: aws.String("203.0.113.1")}}}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	lists := f.double.Calls("ListResourceRecordSets")
	s := f.set(t, route53set.Options{PageSize: 2})
	got, err := s.List(ctx)
	if err != nil || !slices.Equal(got, want) {
		t.Fatalf("List with 2 per page = %v, %v; want %v", got, err, want)
	}
	if pages := f.double.Calls("ListResourceRecordSets") - lists; pages < 4 {
		t.Fatalf("List of 7 records 2 per page made %d calls, want at least 4 pages", pages)
	}
}

func TestASimpleRecordAtTheNameIsReportedNotOverwritten(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	_, err := f.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
		HostedZoneId: aws.String(f.zone),
		ChangeBatch: &types.ChangeBatch{Changes: []types.Change{{Action: types.ChangeActionCreate,
			ResourceRecordSet: &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA, TTL: aws.Int64(60),
				ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}, {Value: aws.String("192.0.2.2")}}}}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s := f.set(t, route53set.Options{})
	for _, op := range []func() error{
		func() error { _, err := s.List(ctx); return err },
		func() error { return s.Add(ctx, netip.MustParseAddr("192.0.2.3")) },
		func() error { return s.Remove(ctx, netip.MustParseAddr("192.0.2.1")) },
	} {
		if err := op(); err == nil || !strings.Contains(err.Error(), "not a multivalue answer record") {
			t.Fatalf("with a simple record at the name: %v", err)
		}
	}
}

func TestDoubleRefusesBatchesAsRoute53Does(t *testing.T) {
	ctx := context.Background()
	f := start(t, route53double.Options{})
	mv := func(addr string, ttl int64) *types.ResourceRecordSet {
		return &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA, SetIdentifier: aws.String(addr),
			MultiValueAnswer: aws.Bool(true), TTL: aws.Int64(ttl), ResourceRecords: []types.ResourceRecord{{Value: aws.String(addr)}}}
	}
	change := func(changes ...types.Change) error {
		_, err := f.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
			HostedZoneId: aws.String(f.zone), ChangeBatch: &types.ChangeBatch{Changes: changes}})
		return err
	}
	if err := change(types.Change{Action: types.ChangeActionCreate, ResourceRecordSet: mv("192.0.2.1", 60)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		changes []types.Change
		want    string
	}{
		{"delete a missing record", []types.Change{{Action: types.ChangeActionDelete, ResourceRecordSet: mv("192.0.2.2", 60)}},
			"Tried to delete resource record set [name='edge.example.test.', type='A', set-identifier='192.0.2.2'] but it was not found"},
		{"delete with another TTL", []types.Change{{Action: types.ChangeActionDelete, ResourceRecordSet: mv("192.0.2.1", 300)}},
			"do not match the current values"},
		{"create an existing record", []types.Change{{Action: types.ChangeActionCreate, ResourceRecordSet: mv("192.0.2.1", 60)}},
			"but it already exists"},
		{"a whole batch fails with one bad change", []types.Change{
			{Action: types.ChangeActionCreate, ResourceRecordSet: mv("192.0.2.5", 60)},
			{Action: types.ChangeActionDelete, ResourceRecordSet: mv("192.0.2.6", 60)}}, "but it was not found"},
		{"outside the zone", []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: &types.ResourceRecordSet{
			Name: aws.String("edge.example.org."), Type: types.RRTypeA, TTL: aws.Int64(60),
			ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}}}, "is not permitted in zone example.test."},
		{"not IPv4", []types.Change{{Action: types.ChangeActionUpsert, ResourceRecordSet: mv("2001:db8::1", 60)}}, "ARRDATAIllegalIPv4Address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := change(tc.changes...)
			var bad *types.InvalidChangeBatch
			if !errors.As(err, &bad) || !strings.Contains(strings.Join(bad.Messages, "\n"), tc.want) {
				t.Fatalf("got %v, want InvalidChangeBatch saying %q", err, tc.want)
			}
		})
	}
	var addrsNow []string
	for _, r := range f.double.RecordSets(f.zone) {
		if r.Type == "A" {
			addrsNow = append(addrsNow, r.Values...)
		}
	}
	if !slices.Equal(addrsNow, []string{"192.0.2.1"}) {
		t.Fatalf("refused batches changed the zone: A values %v", addrsNow)
	}
	_, err := f.client.GetChange(ctx, &route53.GetChangeInput{Id: aws.String("/change/CNOSUCHCHANGE1")})
	var noChange *types.NoSuchChange
	if !errors.As(err, &noChange) {
		t.Fatalf("GetChange of an unknown ID: %v, want NoSuchChange", err)
	}
	_, err = f.client.ListResourceRecordSets(ctx, &route53.ListResourceRecordSetsInput{HostedZoneId: aws.String("ZNOSUCHZONE")})
	var noZone *types.NoSuchHostedZone
	if !errors.As(err, &noZone) {
		t.Fatalf("List of an unknown zone: %v, want NoSuchHostedZone", err)
	}
}

func TestNewRefusesBadSettings(t *testing.T) {
	for _, tc := range []struct {
		name, zone, record string
		opts               route53set.Options
		want               string
	}{
		{"no zone", "", name, route53set.Options{}, "hosted zone ID is empty"},
		{"bad name", "Z1", "edge_example..test", route53set.Options{}, "empty label"},
		{"ttl too long", "Z1", name, route53set.Options{TTL: 48 * time.Hour}, "ttl 48h0m0s is outside"},
		{"page size", "Z1", name, route53set.Options{PageSize: 301}, "page size 301"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := route53set.New(nil, tc.zone, tc.record, tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New: %v, want it to say %q", err, tc.want)
			}
		})
	}
}

func ExampleSet() {
	// In production: client, _ := route53set.NewClient(ctx, route53set.ClientOptions{})
	d := route53double.New(route53double.Options{})
	srv := httptest.NewServer(d)
	defer srv.Close()
	ctx := context.Background()
	client, _ := route53set.NewClient(ctx, route53set.ClientOptions{Endpoint: srv.URL,
		Credentials: credentials.NewStaticCredentialsProvider("AKID", "secret", "")})
	s, _ := route53set.New(client, d.AddHostedZone("example.test."), "edge.example.test", route53set.Options{
		TTL: 30 * time.Second, Poll: backoff.Backoff{Base: time.Millisecond, Cap: time.Millisecond}})
	_ = s.Add(ctx, netip.MustParseAddr("192.0.2.1"))
	_ = s.Add(ctx, netip.MustParseAddr("192.0.2.2"))
	_ = s.Remove(ctx, netip.MustParseAddr("192.0.2.1"))
	got, _ := s.List(ctx)
	fmt.Println(got, s.TTL())
	// Output: [192.0.2.2] 30s
}
