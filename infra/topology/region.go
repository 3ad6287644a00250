package topology

import (
	"fmt"
	"slices"
	"strings"
)

// regions validates the user-defined regions: one-word names, members that parse, region
// members that are defined, and no region containing itself. Members may be negated
// (regionMatches says how they combine; Warnings flags it).
func (v *validator) regions(in map[string][]string) map[string][]Statement {
	if len(in) == 0 {
		return nil
	}
	out := make(map[string][]Statement, len(in))
	for _, name := range sortedKeys(in) {
		field := "regions." + name
		if len(strings.Fields(name)) != 1 || strings.TrimSpace(name) != name {
			v.fail("regions", "%q: a region name is one word", name)
		}
		if len(in[name]) == 0 {
			v.fail(field, "empty region: list its members (subnet, country, continent, isp, region, pool, datacenter)")
		}
		var members []Statement
		for i, m := range in[name] {
			st, err := parseStatement(m)
			if err != nil {
				v.fail(fmt.Sprintf("%s[%d]", field, i), "%v", err)
				continue
			}
			members = append(members, st)
		}
		out[name] = members
	}
	for _, name := range sortedKeys(out) {
		for i, m := range out[name] {
			if m.Kind == KindRegion {
				if _, ok := out[m.Name]; !ok {
					if v.unpasted != nil {
						v.unpasted[m.Name] = true
					} else {
						v.fail(fmt.Sprintf("regions.%s[%d]", name, i), "region %q is not defined under regions", m.Name)
					}
				}
			}
		}
	}
	v.cycles(out)
	return out
}

// cycles refuses a region that contains itself, directly or through other regions, naming the
// path once per cycle.
func (v *validator) cycles(regions map[string][]Statement) {
	const (
		unseen = iota
		open
		done
	)
	state := map[string]int{}
	var path []string
	var visit func(name string)
	visit = func(name string) {
		state[name] = open
		path = append(path, name)
		for _, m := range regions[name] {
			if m.Kind != KindRegion {
				continue
			}
			if _, ok := regions[m.Name]; !ok {
				continue // reported as undefined
			}
			switch state[m.Name] {
			case open:
				start := slices.Index(path, m.Name)
				loop := append(slices.Clone(path[start:]), m.Name)
				v.fail("regions."+m.Name, "region cycle %s: a region cannot contain itself", strings.Join(loop, " → "))
			case unseen:
				visit(m.Name)
			}
		}
		path = path[:len(path)-1]
		state[name] = done
	}
	for _, name := range sortedKeys(regions) {
		if state[name] == unseen {
			visit(name)
		}
	}
}

// regionMatches reports whether region name matches by test, and names the member that
// decided. test is the plain (un-negated) match of one member. The region matches when a plain
// member matches (or it has no plain member) and no negated member's plain form matches: "EU,
// not GB" is Europe without Britain, "not US, not CA" is everywhere else. The sources do not
// say how BIG-IP combines negated members; Warnings flags every region that has them. w holds
// the regions on the current path, guarding against cycles in a Set Parse did not build, and
// the verdict on each region already judged in this match, so regions nested as a diamond
// (each holding two that hold the same next one) cost their number, not 2^depth.
func (s *Set) regionMatches(name string, w *walk, test func(Statement, *walk) (bool, string)) (bool, string) {
	if _, defined := s.Regions[name]; !defined || w.path[name] {
		return false, "" // a region not pasted is inside only what declares it (Paste.Unpasted)
	}
	if v, ok := w.judged[name]; ok {
		return v.ok, v.via
	}
	ok, via := s.judgeRegion(name, w, test)
	w.judged[name] = verdict{ok, via}
	return ok, via
}

// walk is one match's way through nested regions: the regions on the current path and the
// verdicts reached so far (one match asks one question of every region: the same test), and
// which regions hold a pool.
type walk struct {
	path   map[string]bool
	judged map[string]verdict
	// holds is regionHoldsPool's answer for each region asked about so far.
	holds map[string]bool
}

type verdict struct {
	ok  bool
	via string
}

func newWalk() *walk {
	return &walk{path: map[string]bool{}, judged: map[string]verdict{}, holds: map[string]bool{}}
}

// judgeRegion is regionMatches for a region not judged yet in w.
func (s *Set) judgeRegion(name string, w *walk, test func(Statement, *walk) (bool, string)) (bool, string) {
	w.path[name] = true
	defer delete(w.path, name)
	hit, plain := "", false
	for _, m := range s.Regions[name] {
		ok, via := test(m, w)
		if !m.Not {
			plain = true
			if ok && hit == "" {
				hit = m.String()
				if via != "" {
					hit += " > " + via
				}
			}
			continue
		}
		if ok {
			return false, "" // excluded by a negated member
		}
	}
	switch {
	case hit != "":
		return true, hit
	case !plain:
		return true, "no negated member matches"
	}
	return false, ""
}

// regionHoldsPool reports whether region name names a pool, plain or negated, directly or
// through nested regions. At wide-IP level only such a region can match a pool: one of other
// kinds alone, negated or not, matches none, as those statements do on their own.
func (s *Set) regionHoldsPool(name string, w *walk) bool {
	if v, ok := w.holds[name]; ok {
		return v
	}
	w.holds[name] = false // a cycle (in a Set Parse did not build) adds nothing
	holds := slices.ContainsFunc(s.Regions[name], func(m Statement) bool {
		return m.Kind == KindPool || m.Kind == KindRegion && s.regionHoldsPool(m.Name, w)
	})
	w.holds[name] = holds
	return holds
}
