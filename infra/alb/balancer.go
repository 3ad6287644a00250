package alb

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"

	"github.com/zero502/zero502/infra/config"
)

// Target states DescribeTargetHealth reports.
const (
	StateInitial     = string(types.TargetHealthStateEnumInitial)
	StateHealthy     = string(types.TargetHealthStateEnumHealthy)
	StateUnhealthy   = string(types.TargetHealthStateEnumUnhealthy)
	StateDraining    = string(types.TargetHealthStateEnumDraining)
	StateUnused      = string(types.TargetHealthStateEnumUnused)
	stateUnavailable = string(types.TargetHealthStateEnumUnavailable)
)

// ErrOthersNotHealthy is wrapped by DrainGuard when draining a target would leave the target
// group without a healthy one (an ALB then fails open and routes to every target).
var ErrOthersNotHealthy = errors.New("not every other target is healthy")

// Balancer is the ALB's own view of the targets of one target group, for the deployer.
type Balancer struct {
	api API
	arn string
}

// NewBalancer watches target group arn through api.
func NewBalancer(api API, arn string) *Balancer { return &Balancer{api: api, arn: arn} }

// Name says which balancer this is, for output.
func (b *Balancer) Name() string { return "alb " + b.arn }

// TargetID is host h's target in the target group for service s: "id:port", where id is the
// host's target (an instance id or IP) when set, else its address, and port the service's
// port on that host.
func TargetID(h config.Host, s config.Service) string {
	id, _ := TargetIDAt(h, h.ServiceAddr(s))
	return id
}

// TargetIDAt is host h's target for the service address addr (host:port, one of
// h.ServiceAddrs: the second start-first port as well as the first): "id:port", where id is the
// host's target (an instance id or IP) when set, else its address, and port addr's own. An
// instance-id target needs that port explicitly: RegisterTargets would otherwise put it on the
// target group's port.
func TargetIDAt(h config.Host, addr string) (string, error) {
	_, port, err := net.SplitHostPort(addr)
	if p, perr := strconv.Atoi(port); err != nil || perr != nil || p < 1 || p > 65535 {
		return "", fmt.Errorf("service address %q of host %s: want host:port with a port from 1 to 65535", addr, h.Name)
	}
	id := h.Target
	if id == "" {
		id = h.Address
	}
	return net.JoinHostPort(id, port), nil
}

// parseTarget reads "id:port" or a bare "id" (the target group's port applies).
func parseTarget(targetID string) (types.TargetDescription, error) {
	if id, port, err := net.SplitHostPort(targetID); err == nil {
		p, err := strconv.Atoi(port)
		if err != nil || p < 1 || p > 65535 || id == "" {
			return types.TargetDescription{}, fmt.Errorf("target %q: want instance-id:port, ip:port or a bare id", targetID)
		}
		return types.TargetDescription{Id: aws.String(id), Port: aws.Int32(int32(p))}, nil
	}
	if targetID == "" || strings.ContainsAny(targetID, " /") {
		return types.TargetDescription{}, fmt.Errorf("target %q: want instance-id:port, ip:port or a bare id", targetID)
	}
	return types.TargetDescription{Id: aws.String(targetID)}, nil
}

// targetStatus is one target as DescribeTargetHealth reports it.
type targetStatus struct {
	ID          string `json:"id"` // id:port
	State       string `json:"state"`
	Reason      string `json:"reason,omitempty"`
	Description string `json:"description,omitempty"`
}

func status(d types.TargetHealthDescription) targetStatus {
	var s targetStatus
	if d.Target != nil {
		s.ID = aws.ToString(d.Target.Id)
		if d.Target.Port != nil {
			s.ID = net.JoinHostPort(s.ID, strconv.Itoa(int(*d.Target.Port)))
		}
	}
	if d.TargetHealth != nil {
		s.State = string(d.TargetHealth.State)
		s.Reason = string(d.TargetHealth.Reason)
		s.Description = aws.ToString(d.TargetHealth.Description)
	}
	return s
}

// TargetHealth is the ALB's state of targetID (initial, healthy, unhealthy, draining, unused,
// unavailable) and its reason code (Target.ResponseCodeMismatch, Target.NotRegistered, …).
func (b *Balancer) TargetHealth(ctx context.Context, targetID string) (state, reason string, err error) {
	t, err := parseTarget(targetID)
	if err != nil {
		return "", "", err
	}
	out, err := b.api.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{
		TargetGroupArn: aws.String(b.arn), Targets: []types.TargetDescription{t},
	})
	if err != nil {
		return "", "", fmt.Errorf("target %s in %s (DescribeTargetHealth): %w%s", targetID, b.arn, err, hint(err))
	}
	if len(out.TargetHealthDescriptions) != 1 {
		return "", "", fmt.Errorf("target %s in %s (DescribeTargetHealth): got %d descriptions, want 1",
			targetID, b.arn, len(out.TargetHealthDescriptions))
	}
	s := status(out.TargetHealthDescriptions[0])
	return s.State, s.Reason, nil
}

// Targets are every target registered in the target group (draining ones included).
func (b *Balancer) Targets(ctx context.Context) ([]targetStatus, error) {
	out, err := b.api.DescribeTargetHealth(ctx, &elbv2.DescribeTargetHealthInput{TargetGroupArn: aws.String(b.arn)})
	if err != nil {
		return nil, fmt.Errorf("targets of %s (DescribeTargetHealth): %w%s", b.arn, err, hint(err))
	}
	list := make([]targetStatus, 0, len(out.TargetHealthDescriptions))
	for _, d := range out.TargetHealthDescriptions {
		list = append(list, status(d))
	}
	return list, nil
}

// others are the registered targets other than except (a bare id excludes it on every port).
func (b *Balancer) others(ctx context.Context, except string) ([]targetStatus, error) {
	ex, err := parseTarget(except)
	if err != nil {
		return nil, err
	}
	all, err := b.Targets(ctx)
	if err != nil {
		return nil, err
	}
	var out []targetStatus
	for _, t := range all {
		id, port, _ := net.SplitHostPort(t.ID)
		if id == aws.ToString(ex.Id) && (ex.Port == nil || port == strconv.Itoa(int(*ex.Port))) {
			continue
		}
		out = append(out, t)
	}
	return out, nil
}

// AllOthersHealthy reports whether every registered target other than except is healthy, and
// there is at least one: the fail-open guard. Draining except is safe only then; otherwise
// the ALB could be left with no healthy target, and it would route to all of them, the
// draining and the broken included.
func (b *Balancer) AllOthersHealthy(ctx context.Context, except string) (bool, error) {
	err := b.DrainGuard(ctx, except)
	if errors.Is(err, ErrOthersNotHealthy) {
		return false, nil
	}
	return err == nil, err
}

// DrainGuard is AllOthersHealthy as an error that names the targets in the way: nil when
// draining except is safe, an error wrapping ErrOthersNotHealthy when it is not. Targets
// already draining (deregistered, their delay not over: a start-first host's old port, a
// batch before) are not counted: they get no new request, and an ALB that fails open routes
// only to its registered targets.
func (b *Balancer) DrainGuard(ctx context.Context, except string) error {
	all, err := b.others(ctx, except)
	if err != nil {
		return err
	}
	others := slices.DeleteFunc(all, func(t targetStatus) bool { return t.State == StateDraining })
	if len(others) == 0 {
		return fmt.Errorf("draining %s would leave %s with no target at all: %w", except, b.arn, ErrOthersNotHealthy)
	}
	var bad []string
	for _, t := range others {
		if t.State != StateHealthy {
			bad = append(bad, fmt.Sprintf("%s is %s (%s)", t.ID, t.State, t.Reason))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("refusing to drain %s: %s; wait until they are healthy (an ALB with no healthy "+
			"target routes to all of them): %w", except, strings.Join(bad, ", "), ErrOthersNotHealthy)
	}
	return nil
}
