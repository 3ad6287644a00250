package route53double

import (
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// canonical is a name as Route 53 returns it: lower case, with the trailing dot.
func canonical(name string) string {
	name = strings.ToLower(name)
	if !strings.HasSuffix(name, ".") {
		name += "."
	}
	return name
}

// reversed is name's labels right to left (www.example.com. → com.example.www), the key
// Route 53 sorts names by.
func reversed(name string) string {
	labels := strings.Split(strings.TrimSuffix(name, "."), ".")
	slices.Reverse(labels)
	return strings.Join(labels, ".")
}

func compareKey(aName, aType, aID, bName, bType, bID string) int {
	if c := strings.Compare(reversed(aName), reversed(bName)); c != 0 {
		return c
	}
	if c := strings.Compare(aType, bType); c != 0 {
		return c
	}
	return strings.Compare(aID, bID)
}

func sortedRRSets(in []RecordSet) []RecordSet {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b RecordSet) int {
		return compareKey(a.Name, a.Type, a.SetIdentifier, b.Name, b.Type, b.SetIdentifier)
	})
	return out
}

func (r RecordSet) describe() string {
	return fmt.Sprintf("[name='%s', type='%s', set-identifier='%s']", r.Name, r.Type, r.SetIdentifier)
}

func (r RecordSet) routing() string {
	switch {
	case r.MultiValueAnswer:
		return "multivalue"
	case r.Weight != nil:
		return "weighted"
	case r.SetIdentifier != "":
		return "routed"
	}
	return "simple"
}

func (r RecordSet) sameValues(o RecordSet) bool {
	return r.TTL == o.TTL && r.routing() == o.routing() && r.HealthCheckID == o.HealthCheckID &&
		(r.Weight == nil) == (o.Weight == nil) && (r.Weight == nil || *r.Weight == *o.Weight) &&
		slices.Equal(sortedValues(r.Values), sortedValues(o.Values))
}

func sortedValues(v []string) []string {
	out := slices.Clone(v)
	slices.Sort(out)
	return out
}

// fromXML checks one change's record set as Route 53's input validation does.
func fromXML(action string, x xmlResourceRecordSet) (RecordSet, error) {
	r := RecordSet{Name: canonical(x.Name), Type: x.Type, SetIdentifier: x.SetIdentifier, Weight: x.Weight,
		HealthCheckID: x.HealthCheckId}
	if x.MultiValueAnswer != nil {
		r.MultiValueAnswer = *x.MultiValueAnswer
	}
	where := fmt.Sprintf("Change with [Action=%s, Name=%s, Type=%s, SetIdentifier=%s]", action, r.Name, r.Type, r.SetIdentifier)
	if x.AliasTarget != nil || x.TTL == nil || len(x.ResourceRecords) == 0 {
		return r, invalidInput("Invalid request: Expected exactly one of [AliasTarget, all of [TTL, and "+
			"ResourceRecords], or TrafficPolicyInstanceId], but found none in %s", where)
	}
	r.TTL = *x.TTL
	if r.TTL < 0 || r.TTL > 2147483647 {
		return r, invalidInput("Invalid request: TTL %d in %s is out of range", r.TTL, where)
	}
	for _, v := range x.ResourceRecords {
		r.Values = append(r.Values, v.Value)
	}
	if (r.SetIdentifier != "") != (r.MultiValueAnswer || r.Weight != nil) {
		return r, invalidInput("Invalid request: a SetIdentifier goes with a routing policy (MultiValueAnswer "+
			"or Weight) and a routing policy needs a SetIdentifier, in %s", where)
	}
	if r.MultiValueAnswer && len(r.Values) != 1 {
		return r, invalidInput("Invalid request: a multivalue answer record holds exactly one value; %s has %d", where, len(r.Values))
	}
	if r.MultiValueAnswer && r.Weight != nil {
		return r, invalidInput("Invalid request: MultiValueAnswer and Weight are two routing policies, in %s", where)
	}
	return r, nil
}

// checkValues refuses values the record type cannot hold, with Route 53's message.
func checkValues(r RecordSet) []string {
	var msgs []string
	if r.Type == "A" {
		for _, v := range r.Values {
			if a, err := netip.ParseAddr(v); err != nil || !a.Is4() {
				msgs = append(msgs, fmt.Sprintf("[Invalid Resource Record: 'FATAL problem: ARRDATAIllegalIPv4Address "+
					"(Value is not a valid IPv4 address) encountered with '%s'']", v))
			}
		}
	}
	return msgs
}

func (s *Server) changeResourceRecordSets(zoneID string, r *http.Request) (any, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil {
		return nil, invalidInput("reading the request body: %v", err)
	}
	var req changeResourceRecordSetsRequest
	if err := xml.Unmarshal(body, &req); err != nil {
		return nil, invalidInput("Could not parse the request body as ChangeResourceRecordSetsRequest XML: %v", err)
	}
	if len(req.ChangeBatch.Changes) == 0 {
		return nil, invalidInput("1 validation error detected: Value '[]' at 'changeBatch.changes' failed to " +
			"satisfy constraint: Member must have length greater than or equal to 1")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil, awsdouble.Errorf(http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: %s", zoneID)
	}
	next := slices.Clone(z.rrsets)
	var msgs []string
	touched := map[string]bool{}
	for _, c := range req.ChangeBatch.Changes {
		rec, err := fromXML(c.Action, c.ResourceRecordSet)
		if err != nil {
			return nil, err
		}
		key := rec.Name + "|" + rec.Type + "|" + rec.SetIdentifier
		if touched[key] {
			return nil, invalidInput("Invalid request: the batch changes %s twice", rec.describe())
		}
		touched[key] = true
		if rec.Name != z.name && !strings.HasSuffix(rec.Name, "."+z.name) {
			msgs = append(msgs, fmt.Sprintf("RRSet with DNS name %s is not permitted in zone %s", rec.Name, z.name))
			continue
		}
		msgs = append(msgs, checkValues(rec)...)
		at := slices.IndexFunc(next, func(o RecordSet) bool {
			return o.Name == rec.Name && o.Type == rec.Type && o.SetIdentifier == rec.SetIdentifier
		})
		switch c.Action {
		case "CREATE", "UPSERT":
			if c.Action == "CREATE" && at >= 0 {
				msgs = append(msgs, fmt.Sprintf("Tried to create resource record set %s but it already exists", rec.describe()))
				continue
			}
			if clash := conflicting(next, rec); clash != "" {
				msgs = append(msgs, clash)
				continue
			}
			if at >= 0 {
				next[at] = rec
			} else {
				next = append(next, rec)
			}
		case "DELETE":
			switch {
			case at < 0:
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set %s but it was not found", rec.describe()))
			case !next[at].sameValues(rec):
				msgs = append(msgs, fmt.Sprintf("Tried to delete resource record set %s but the values provided "+
					"do not match the current values", rec.describe()))
			default:
				next = slices.Delete(next, at, at+1)
			}
		default:
			return nil, invalidInput("1 validation error detected: Value '%s' at 'changeBatch.changes.1.member.action' "+
				"failed to satisfy constraint: Member must satisfy enum value set: [CREATE, DELETE, UPSERT]", c.Action)
		}
	}
	if len(msgs) > 0 {
		return nil, &batchError{msgs}
	}
	z.rrsets = next
	c := &change{comment: req.ChangeBatch.Comment, submitted: s.clock.Now()}
	for c.id == "" || s.changes[c.id] != nil {
		c.id = fmt.Sprintf("C%013X", rand.Uint64()>>12) // Route 53's shape: C and 13 characters
	}
	s.changes[c.id] = c
	info := s.changeInfo(c)
	info.Status = "PENDING" // a change is never in sync when it is accepted
	return changeInfoAnswer("ChangeResourceRecordSets", info), nil
}

// conflicting is Route 53's refusal to mix routing policies at one name and type.
func conflicting(rrsets []RecordSet, rec RecordSet) string {
	for _, o := range rrsets {
		if o.Name != rec.Name || o.Type != rec.Type || o.SetIdentifier == rec.SetIdentifier {
			continue
		}
		if o.routing() != rec.routing() {
			return fmt.Sprintf("RRSet of type %s with DNS name %s is not permitted because a conflicting RRSet "+
				"of type %s with the same DNS name (%s routing) already exists", rec.Type, rec.Name, o.Type, o.routing())
		}
	}
	return ""
}

func (s *Server) listResourceRecordSets(zoneID string, q url.Values) (any, error) {
	maxItems := 300
	if v := q.Get("maxitems"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return nil, invalidInput("Invalid value for parameter maxitems: %q", v)
		}
		maxItems = min(n, 300)
	}
	name, typ, id := q.Get("name"), q.Get("type"), q.Get("identifier")
	if typ != "" && name == "" {
		return nil, invalidInput("The input is not valid: a type needs a name")
	}
	if id != "" && (name == "" || typ == "") {
		return nil, invalidInput("The input is not valid: an identifier needs a name and a type")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	z, ok := s.zones[zoneID]
	if !ok {
		return nil, awsdouble.Errorf(http.StatusNotFound, "NoSuchHostedZone", "No hosted zone found with ID: %s", zoneID)
	}
	all := sortedRRSets(z.rrsets)
	start := 0
	if name != "" {
		name = canonical(name)
		start = slices.IndexFunc(all, func(r RecordSet) bool {
			return compareKey(r.Name, r.Type, r.SetIdentifier, name, typ, id) >= 0
		})
		if start < 0 {
			start = len(all)
		}
	}
	resp := listResourceRecordSetsResponse{Xmlns: Namespace, MaxItems: strconv.Itoa(maxItems)}
	page := all[start:]
	if len(page) > maxItems {
		next := page[maxItems]
		resp.IsTruncated = true
		resp.NextRecordName, resp.NextRecordType, resp.NextRecordIdentifier = next.Name, next.Type, next.SetIdentifier
		page = page[:maxItems]
	}
	for _, r := range page {
		x := xmlResourceRecordSet{Name: r.Name, Type: r.Type, SetIdentifier: r.SetIdentifier, Weight: r.Weight,
			HealthCheckId: r.HealthCheckID}
		ttl := r.TTL
		x.TTL = &ttl
		if r.MultiValueAnswer {
			t := true
			x.MultiValueAnswer = &t
		}
		for _, v := range r.Values {
			x.ResourceRecords = append(x.ResourceRecords, xmlResourceRecord{v})
		}
		resp.ResourceRecordSets = append(resp.ResourceRecordSets, x)
	}
	return resp, nil
}
