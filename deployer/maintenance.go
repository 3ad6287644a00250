package deployer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/zero502/zero502/deployer/balancer"
	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/config"
)

// The operations of zero502 maintenance.
const (
	MaintenanceStatusOp = "status"
	MaintenanceOnOp     = "on"
	MaintenanceOffOp    = "off"
)

// maintenanceAt is the maintenance switch of one LB instance, or why it could not be read or set.
type maintenanceAt struct {
	Admin string `json:"admin"` // host:port of its admin API
	adminapi.Maintenance
	Error string `json:"error,omitempty"`
}

// String is one line: the instance and its state.
func (m maintenanceAt) String() string {
	switch {
	case m.Error != "":
		return fmt.Sprintf("%s  unknown: %s", m.Admin, m.Error)
	case !m.On:
		return fmt.Sprintf("%s  off (%d answered with the page since the LB started)", m.Admin, m.Answered)
	}
	s := fmt.Sprintf("%s  on since %s (Retry-After %s, %d answered)", m.Admin, m.Since.Local().Format(time.DateTime), m.RetryAfter, m.Answered)
	if m.Message != "" {
		s += ": " + strings.ReplaceAll(m.Message, "\n", " ")
	}
	return s
}

// MaintenancePage reads (op status) or sets (on, with change; off) the maintenance switch of every
// instance of cfg's in-house LB (balancer.admins, else balancer.admin): while on, each answers
// every request with 503, Retry-After and the page, and deploys and health checks go on. It
// asks every instance even when one fails, and returns each one's state; the error names the
// instances that failed and what the others are now, so a half-applied switch is never silent.
func MaintenancePage(ctx context.Context, cfg *config.Config, op string, change *adminapi.MaintenanceChange) ([]maintenanceAt, error) {
	switch k := cfg.Balancer.Kind; k {
	case config.BalancerInHouse:
	case config.BalancerALB:
		return nil, fmt.Errorf("balancer.kind alb: %w; add a listener rule with a fixed-response action (503) at the ALB instead", balancer.ErrNoMaintenance)
	default:
		return nil, fmt.Errorf("balancer.kind %s: %w; only the in-house LB (kind inhouse) answers with a maintenance page", k, balancer.ErrNoMaintenance)
	}
	if op == MaintenanceOnOp {
		if change == nil {
			return nil, fmt.Errorf("maintenance on needs a message and a retry-after: %w", adminapi.ErrBadMaintenance)
		}
		if err := change.Check(); err != nil {
			return nil, err
		}
	} else if op != MaintenanceOffOp && op != MaintenanceStatusOp {
		return nil, fmt.Errorf("maintenance %q: must be on, off or status", op)
	}
	var out []maintenanceAt
	var failed []string
	for _, admin := range cfg.Balancer.AdminAddrs() {
		b := balancer.NewInHouse(admin, cfg.Balancer.AdminToken)
		var m adminapi.Maintenance
		var err error
		switch op {
		case MaintenanceOnOp:
			m, err = b.SetMaintenance(ctx, change)
		case MaintenanceOffOp:
			m, err = b.SetMaintenance(ctx, nil)
		default:
			m, err = b.Maintenance(ctx)
		}
		at := maintenanceAt{Admin: admin, Maintenance: m}
		if err != nil {
			at.Error = err.Error()
			failed = append(failed, admin)
		}
		out = append(out, at)
	}
	if len(failed) > 0 {
		return out, fmt.Errorf("maintenance %s failed at %s of %d LB instances (each one's state is listed); fix them and run it again",
			op, strings.Join(failed, ", "), len(out))
	}
	return out, nil
}
