package config

import "time"

// The rule of a maintenance page's Retry-After (balancer.maintenance_retry_after, zero502
// maintenance on --retry-after, PUT /admin/maintenance): whole seconds, from minRetryAfter to
// MaxRetryAfter.
const (
	minRetryAfter = time.Second
	MaxRetryAfter = 24 * time.Hour
)

// RetryAfterRule is the rule d breaks as a Retry-After, or "" when it keeps it.
func RetryAfterRule(d time.Duration) string {
	switch {
	case d < minRetryAfter || d > MaxRetryAfter:
		return "must be from " + minRetryAfter.String() + " to " + MaxRetryAfter.String()
	case d%time.Second != 0:
		return "must be whole seconds (Retry-After counts seconds)"
	}
	return ""
}
