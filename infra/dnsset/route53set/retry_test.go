package route53set_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/route53"
	"github.com/aws/aws-sdk-go-v2/service/route53/types"

	"github.com/zero502/zero502/infra/dnsset/route53double"
	"github.com/zero502/zero502/infra/dnsset/route53set"
)

// startInterposed is start with a hook in front of the double: before runs ahead of the next
// change batch (POST) once armed, and cut, when set, lets the double apply that batch and then
// closes the connection so the answer never reaches the client, as a network fault would.
func startInterposed(t *testing.T, before func(), cut bool) (fixture, *atomic.Bool) {
	t.Helper()
	d := route53double.New(route53double.Options{})
	var armed atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || !armed.CompareAndSwap(true, false) {
			d.ServeHTTP(w, r)
			return
		}
		if before != nil {
			before()
		}
		if !cut {
			d.ServeHTTP(w, r)
			return
		}
		d.ServeHTTP(httptest.NewRecorder(), r)
		conn, _, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijacking the connection: %v", err)
			return
		}
		conn.Close()
	}))
	t.Cleanup(srv.Close)
	client, err := route53set.NewClient(context.Background(), route53set.ClientOptions{
		Endpoint:    srv.URL,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", ""),
	})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{double: d, client: client, zone: d.AddHostedZone("example.test")}, &armed
}

func TestRemoveWhoseAnswerWasLostIsDoneWhenTheAddressLeftTheSet(t *testing.T) {
	ctx := context.Background()
	f, armed := startInterposed(t, nil, true)
	s := f.set(t, route53set.Options{})
	for _, a := range addrs("192.0.2.1", "192.0.2.2") {
		if err := s.Add(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	changes := f.double.Calls("ChangeResourceRecordSets")
	armed.Store(true)
	if err := s.Remove(ctx, netip.MustParseAddr("192.0.2.1")); err != nil {
		t.Fatalf("Remove whose DELETE was applied but whose answer was lost: %v", err)
	}
	if got := f.double.Calls("ChangeResourceRecordSets") - changes; got != 2 {
		t.Fatalf("the SDK sent the DELETE %d times, want 2 (the applied one and its refused retry)", got)
	}
	if got, _ := s.List(ctx); !slices.Equal(got, addrs("192.0.2.2")) {
		t.Fatalf("set after Remove: %v, want [192.0.2.2]", got)
	}
}

func TestRemoveRefusedAsNotFoundStillFailsWhileTheAddressIsInTheSet(t *testing.T) {
	ctx := context.Background()
	var f fixture
	// Between Remove's listing and its DELETE, another writer moves 192.0.2.1 to a record with
	// another set identifier: the DELETE finds no record, yet the address is still served.
	rename := func() {
		mv := func(id string) *types.ResourceRecordSet {
			return &types.ResourceRecordSet{Name: aws.String(name), Type: types.RRTypeA, SetIdentifier: aws.String(id),
				MultiValueAnswer: aws.Bool(true), TTL: aws.Int64(60),
				ResourceRecords: []types.ResourceRecord{{Value: aws.String("192.0.2.1")}}}
		}
		_, err := f.client.ChangeResourceRecordSets(ctx, &route53.ChangeResourceRecordSetsInput{
			HostedZoneId: aws.String(f.zone), ChangeBatch: &types.ChangeBatch{Changes: []types.Change{
				{Action: types.ChangeActionDelete, ResourceRecordSet: mv("192.0.2.1")},
				{Action: types.ChangeActionCreate, ResourceRecordSet: mv("other-writer")},
			}}})
		if err != nil {
			t.Errorf("the other writer's change: %v", err)
		}
	}
	f, armed := startInterposed(t, rename, false)
	s := f.set(t, route53set.Options{})
	for _, a := range addrs("192.0.2.1", "192.0.2.2") {
		if err := s.Add(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	armed.Store(true)
	err := s.Remove(ctx, netip.MustParseAddr("192.0.2.1"))
	if err == nil || !strings.Contains(err.Error(), "but it was not found") {
		t.Fatalf("Remove refused as not found while the address is still in the set: %v, want the refusal", err)
	}
	if got, _ := s.List(ctx); !slices.Equal(got, addrs("192.0.2.1", "192.0.2.2")) {
		t.Fatalf("set after the refused Remove: %v", got)
	}
}
