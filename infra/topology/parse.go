package topology

import (
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// file is the YAML a set is read from, field for field; unknown keys are refused.
type file struct {
	LongestMatch        *bool               `yaml:"longest_match"`
	PreferECS           bool                `yaml:"prefer_edns0_client_subnet"`
	Level               string              `yaml:"level"`
	WideIPLoadBalancing string              `yaml:"wideip_load_balancing"`
	Pool                string              `yaml:"pool"`
	Regions             map[string][]string `yaml:"regions"`
	Geo                 []fileGeo           `yaml:"geo"`
	Pools               []filePool          `yaml:"pools"`
	Records             []fileRecord        `yaml:"records"`
}

type fileGeo struct {
	Subnet    string `yaml:"subnet"`
	Country   string `yaml:"country"`
	Continent string `yaml:"continent"`
	ISP       string `yaml:"isp"`
	State     string `yaml:"state"`
}

type filePool struct {
	Name          string       `yaml:"name"`
	LoadBalancing string       `yaml:"load_balancing"`
	Fallback      string       `yaml:"fallback"`
	Members       []fileMember `yaml:"members"`
}

type fileMember struct {
	Name       string `yaml:"name"`
	Address    string `yaml:"address"`
	DataCenter string `yaml:"datacenter"`
}

type fileRecord struct {
	Source      string `yaml:"source"`
	Destination string `yaml:"destination"`
	Score       *int   `yaml:"score"`
}

// Defaults BIG-IP gives a pool that does not say.
const (
	defaultPoolLoadBalancing = "round-robin"
	defaultPoolFallback      = "return-to-dns"
)

// poolModes are the tmsh values of a GTM pool's load-balancing-mode and fallback-mode.
var poolModes = []string{
	"completion-rate", "cpu", "drop-packet", "fallback-ip", "fewest-hops", "global-availability",
	"kilobytes-per-second", "least-connections", "lowest-round-trip-time", "none", "packet-rate",
	"quality-of-service", "ratio", "return-to-dns", "round-robin", "static-persistence",
	"topology", "virtual-server-capacity", "virtual-server-score",
}

// wideIPModes are the tmsh values of a wide IP's pool-lb-mode.
var wideIPModes = []string{"global-availability", "ratio", "round-robin", "topology"}

// Load reads the set at path; see Parse.
func Load(path string) (*Set, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	s, err := Parse(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse reads a set from YAML and validates it. Keys are strict (an unknown key is an error).
// Every problem is reported, joined, each naming the field (records[2].source), the value and
// the rule: a statement that does not parse, a source naming a pool or data center, a negative
// score, an unknown or cyclic region, a duplicate pool, member or geo subnet, a level that
// does not fit the pools. Defaults: longest_match true, level wideip, wideip_load_balancing
// topology, a pool's load_balancing round-robin and fallback return-to-dns, a record's score 1.
func Parse(r io.Reader) (*Set, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var f file
	v := &validator{}
	if err := dec.Decode(&f); err != nil {
		var typeErr *yaml.TypeError
		switch {
		case errors.Is(err, io.EOF):
			return nil, errors.New("empty topology file: want at least pools and records")
		case !errors.As(err, &typeErr):
			return nil, fmt.Errorf("topology file: %w", err)
		}
		// Values of the wrong type (or unknown keys) leave the rest decoded: report them
		// with whatever else is wrong.
		for _, e := range typeErr.Errors {
			v.errs = append(v.errs, fmt.Errorf("topology file: %s", e))
		}
	}
	if err := oneDocument(dec); err != nil {
		v.errs = append(v.errs, err)
	}
	s := v.set(&f)
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return s, nil
}

// errSecondDocument is Parse's error for a file holding more than one YAML document.
var errSecondDocument = errors.New("a topology file is one YAML document")

// oneDocument checks that dec, past the first document, is at the end of its input: a second
// document (after ---) would otherwise be dropped without a word, its records with it.
func oneDocument(dec *yaml.Decoder) error {
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
		return nil
	case err != nil:
		return fmt.Errorf("topology file: after the first document: %w", err)
	}
	return fmt.Errorf("topology file: a second YAML document starts at line %d (after ---): %w; "+
		"put every pool and record in the first and remove the ---", next.Line, errSecondDocument)
}

// validator turns the file into a Set, collecting every error instead of stopping at one.
type validator struct {
	errs []error
	// recordField names records[i] in errors; nil for "records[i]".
	recordField func(i int) string
	// unpasted, when not nil, takes the regions named but not defined instead of refusing
	// them: a tmsh paste of the records alone is the common case (Paste.Unpasted).
	unpasted map[string]bool
}

// undefinedRegion refuses region name, named at field by st, as not defined, or notes it
// as unpasted.
func (v *validator) undefinedRegion(field string, st Statement) {
	if v.unpasted != nil {
		v.unpasted[st.Name] = true
		return
	}
	v.fail(field, "%q: region %q is not defined under regions", st.String(), st.Name)
}

func (v *validator) fail(field, format string, args ...any) {
	v.errs = append(v.errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
}

func (v *validator) set(f *file) *Set {
	s := &Set{
		LongestMatch:        f.LongestMatch == nil || *f.LongestMatch,
		PreferECS:           f.PreferECS,
		Level:               Level(f.Level),
		WideIPLoadBalancing: f.WideIPLoadBalancing,
		Pool:                f.Pool,
	}
	if s.Level == "" {
		s.Level = LevelWideIP
	}
	if s.WideIPLoadBalancing == "" {
		s.WideIPLoadBalancing = "topology"
	}
	if s.Level != LevelWideIP && s.Level != LevelPool {
		v.fail("level", "%q: want wideip (candidates are pools) or pool (candidates are the members of one pool)", f.Level)
	}
	if !slices.Contains(wideIPModes, s.WideIPLoadBalancing) {
		v.fail("wideip_load_balancing", "%q: want one of %s", s.WideIPLoadBalancing, strings.Join(wideIPModes, ", "))
	} else if s.Level == LevelWideIP && s.WideIPLoadBalancing != "topology" {
		v.fail("wideip_load_balancing", "%s: level wideip scores the wide IP's topology choice, so its method must be topology", s.WideIPLoadBalancing)
	}
	s.Regions = v.regions(f.Regions)
	s.Geo = v.geo(f.Geo)
	s.Pools = v.pools(f.Pools)
	v.level(s)
	s.Records = v.records(f.Records, s.Regions)
	return s
}

func (v *validator) geo(in []fileGeo) []geoEntry {
	var out []geoEntry
	seen := map[netip.Prefix]int{}
	for i, g := range in {
		field := fmt.Sprintf("geo[%d]", i)
		p, err := netip.ParsePrefix(strings.TrimSpace(g.Subnet))
		switch {
		case err != nil:
			v.fail(field+".subnet", "%q is not CIDR (want e.g. 10.0.0.0/8)", g.Subnet)
			continue
		case p != p.Masked():
			v.fail(field+".subnet", "%s has host bits set (did you mean %s?)", g.Subnet, p.Masked())
			continue
		}
		if j, dup := seen[p]; dup {
			v.fail(field+".subnet", "%s is already classified by geo[%d]: one entry per subnet", p, j)
			continue
		}
		seen[p] = i
		e := geoEntry{Subnet: p, Country: strings.ToUpper(g.Country), Continent: strings.ToUpper(g.Continent), ISP: strings.Join(strings.Fields(g.ISP), " "), State: strings.Join(strings.Fields(g.State), " ")}
		if code, ok := continentCode(g.Continent); ok {
			e.Continent = code
		}
		if e.Country == "" && e.Continent == "" && e.ISP == "" && e.State == "" {
			v.fail(field, "%s classifies nothing: give a country, a continent, an isp or a state", p)
		}
		if e.Country != "" && !isCountryCode(e.Country) {
			v.fail(field+".country", "%q is not a two-letter code (e.g. PT)", g.Country)
		}
		if _, ok := continents[e.Continent]; e.Continent != "" && !ok {
			v.fail(field+".continent", "%q %s", g.Continent, continentRule)
		}
		out = append(out, e)
	}
	return out
}

func (v *validator) pools(in []filePool) []Pool {
	if len(in) == 0 {
		v.fail("pools", "no pools: list the wide IP's pools (the candidates at level wideip)")
	}
	var out []Pool
	seen := map[string]int{}
	for i, fp := range in {
		field := fmt.Sprintf("pools[%d]", i)
		p := Pool{Name: fp.Name, LoadBalancing: fp.LoadBalancing, Fallback: fp.Fallback}
		if p.LoadBalancing == "" {
			p.LoadBalancing = defaultPoolLoadBalancing
		}
		if p.Fallback == "" {
			p.Fallback = defaultPoolFallback
		}
		switch j, dup := seen[p.Name]; {
		case len(strings.Fields(p.Name)) != 1 || strings.TrimSpace(p.Name) != p.Name:
			v.fail(field+".name", "%q: a pool name is one word", p.Name)
		case dup:
			v.fail(field+".name", "%s duplicates pools[%d]", p.Name, j)
		default:
			seen[p.Name] = i
		}
		if !slices.Contains(poolModes, p.LoadBalancing) {
			v.fail(field+".load_balancing", "%q: want a tmsh load-balancing-mode (%s)", p.LoadBalancing, strings.Join(poolModes, ", "))
		}
		if !slices.Contains(poolModes, p.Fallback) {
			v.fail(field+".fallback", "%q: want a tmsh fallback-mode (%s)", p.Fallback, strings.Join(poolModes, ", "))
		}
		members := map[string]int{}
		for k, fm := range fp.Members {
			mf := fmt.Sprintf("%s.members[%d]", field, k)
			m := Member{Name: fm.Name, DataCenter: fm.DataCenter}
			if len(strings.Fields(m.Name)) != 1 || strings.TrimSpace(m.Name) != m.Name {
				v.fail(mf+".name", "%q: a member name is one word", m.Name)
			} else if j, dup := members[m.Name]; dup {
				v.fail(mf+".name", "%s duplicates %s.members[%d]", m.Name, field, j)
			} else {
				members[m.Name] = k
			}
			a, err := netip.ParseAddr(strings.TrimSpace(fm.Address))
			if err != nil {
				v.fail(mf+".address", "%q is not an IP address (a member is a virtual server: give its address)", fm.Address)
			}
			m.Address = a.Unmap()
			if m.DataCenter != "" && len(strings.Fields(m.DataCenter)) != 1 {
				v.fail(mf+".datacenter", "%q: a data center name is one word", m.DataCenter)
			}
			p.Members = append(p.Members, m)
		}
		out = append(out, p)
	}
	return out
}

// level checks that the level, the pool field and the pools fit together.
func (v *validator) level(s *Set) {
	switch s.Level {
	case LevelWideIP:
		if s.Pool != "" {
			v.fail("pool", "%s: only used with level pool (at level wideip the candidates are all the pools)", s.Pool)
		}
	case LevelPool:
		if s.Pool == "" && len(s.Pools) == 1 {
			s.Pool = s.Pools[0].Name
		}
		if s.Pool == "" {
			v.fail("pool", "level pool with %d pools: name the pool whose members compete", len(s.Pools))
			return
		}
		i := slices.IndexFunc(s.Pools, func(p Pool) bool { return p.Name == s.Pool })
		if i < 0 {
			v.fail("pool", "%s is not under pools", s.Pool)
			return
		}
		p := s.Pools[i]
		if len(p.Members) == 0 {
			v.fail(fmt.Sprintf("pools[%d].members", i), "pool %s has no members: at level pool its members are the candidates", p.Name)
		}
		if p.LoadBalancing != "topology" {
			v.fail(fmt.Sprintf("pools[%d].load_balancing", i), "%s: level pool scores pool %s's topology choice, so its method must be topology", p.LoadBalancing, p.Name)
		}
	}
}

func (v *validator) records(in []fileRecord, regions map[string][]Statement) []Record {
	if len(in) == 0 {
		v.fail("records", "no records: a topology set needs at least one")
	}
	var out []Record
	for i, fr := range in {
		field := fmt.Sprintf("records[%d]", i)
		if v.recordField != nil {
			field = v.recordField(i)
		}
		r := Record{Score: DefaultScore, DefaultScore: fr.Score == nil}
		if fr.Score != nil {
			r.Score = *fr.Score
			if r.Score < 0 {
				v.fail(field+".score", "%d: a score is zero or more", r.Score)
			}
		}
		var err error
		if r.Source, err = parseStatement(fr.Source); err != nil {
			v.fail(field+".source", "%v", err)
		} else if r.Source.Kind == KindPool || r.Source.Kind == KindDataCenter {
			v.fail(field+".source", "%q: an LDNS is never in a %s; %s names destinations only", fr.Source, r.Source.Kind.words(), r.Source.Kind)
		} else {
			v.regionDefined(field+".source", r.Source, regions)
		}
		if r.Destination, err = parseStatement(fr.Destination); err != nil {
			v.fail(field+".destination", "%v", err)
		} else {
			v.regionDefined(field+".destination", r.Destination, regions)
		}
		out = append(out, r)
	}
	return out
}

func (v *validator) regionDefined(field string, st Statement, regions map[string][]Statement) {
	if st.Kind != KindRegion {
		return
	}
	if _, ok := regions[st.Name]; !ok {
		v.undefinedRegion(field, st)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
