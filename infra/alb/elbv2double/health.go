package elbv2double

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// checkResult is the outcome of one health check, with the reason code DescribeTargetHealth
// reports for a failing target.
type checkResult struct {
	ok          bool
	reason      string
	description string
}

// probe is one health check to make in a round.
type probe struct {
	key        string
	generation int
	url        string
	timeout    time.Duration
	matcher    string
}

// checkLoop runs a target group's health checks once per interval (read again every round,
// so a changed interval takes effect at the next round) until the server closes.
func (s *Server) checkLoop(g *targetGroup) {
	defer s.wg.Done()
	for {
		s.mu.Lock()
		interval := g.settings.Interval
		s.mu.Unlock()
		select {
		case <-s.ctx.Done():
			return
		case <-s.clock.After(interval):
		}
		s.checkRound(g)
	}
}

// checkRound checks every registered, non-draining target of g once, concurrently, then
// applies the results under the lock.
func (s *Server) checkRound(g *targetGroup) {
	s.mu.Lock()
	g.expire(s.clock.Now())
	var probes []probe
	for key, t := range g.targets {
		if t.state == StateDraining {
			continue
		}
		host := t.id
		if g.targetType == "instance" {
			host = s.instances[t.id]
		}
		url := ""
		if host != "" {
			url = strings.ToLower(g.settings.HealthCheckProtocol) + "://" +
				targetKey(host, g.settings.checkPort(t.port)) + g.settings.HealthCheckPath
		}
		probes = append(probes, probe{key: key, generation: t.generation, url: url,
			timeout: g.settings.Timeout, matcher: g.settings.Matcher})
	}
	s.mu.Unlock()

	results := make([]checkResult, len(probes))
	var wg sync.WaitGroup
	for i, p := range probes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = s.check(p)
		}()
	}
	wg.Wait()

	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock.Now()
	for i, p := range probes {
		t, ok := g.targets[p.key]
		if !ok || t.generation != p.generation || t.state == StateDraining {
			continue // deregistered or re-registered while the check ran
		}
		t.record(results[i], g.settings, now)
	}
	g.updateFailOpen()
	g.rounds++
}

// check makes one HTTP health check, bounded by the target group's timeout (in real time: it
// is a real request to a real socket).
func (s *Server) check(p probe) checkResult {
	if p.url == "" {
		return checkResult{reason: "Target.FailedHealthChecks",
			description: "Health checks failed: no address known for this instance (SetInstanceAddress)"}
	}
	ctx, cancel := context.WithTimeout(s.ctx, p.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return checkResult{reason: "Target.FailedHealthChecks", description: err.Error()}
	}
	req.Header.Set("User-Agent", "ELB-HealthChecker/2.0")
	resp, err := s.hc.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return checkResult{reason: "Target.Timeout", description: "Request timed out"}
		}
		return checkResult{reason: "Target.FailedHealthChecks", description: "Health checks failed"}
	}
	_ = resp.Body.Close()
	codes, _ := parseMatcher(p.matcher)
	if !codes.match(resp.StatusCode) {
		return checkResult{reason: "Target.ResponseCodeMismatch",
			description: fmt.Sprintf("Health checks failed with these codes: [%d]", resp.StatusCode)}
	}
	return checkResult{ok: true}
}

// matcher is a parsed Matcher.HttpCode: "200", "200,202" or "200-299".
type matcher [][2]int

func parseMatcher(s string) (matcher, error) {
	var m matcher
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			return nil, fmt.Errorf("%q is not a status code", lo)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				return nil, fmt.Errorf("%q is not a status code", hi)
			}
		}
		if a < 200 || b > 499 || a > b {
			return nil, fmt.Errorf("codes must be from 200 to 499, got %q", part)
		}
		m = append(m, [2]int{a, b})
	}
	return m, nil
}

func (m matcher) match(code int) bool {
	for _, r := range m {
		if code >= r[0] && code <= r[1] {
			return true
		}
	}
	return false
}
