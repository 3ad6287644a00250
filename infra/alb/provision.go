package alb

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/aws/aws-sdk-go-v2/aws"
	elbv2 "github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2"
	"github.com/aws/aws-sdk-go-v2/service/elasticloadbalancingv2/types"
	"github.com/aws/smithy-go"

	"github.com/zero502/zero502/infra/config"
)

// Change is one managed setting of the target group: what it runs, what the config says.
type Change struct {
	Key     string `json:"key"`
	Live    string `json:"live"`
	Config  string `json:"config"`
	Differs bool   `json:"differs"`
}

// Diff is what Provision found and did.
type Diff struct {
	TargetGroupARN string `json:"target_group_arn"`
	// Fields are every managed setting, in a fixed order, changed or not.
	Fields []Change `json:"fields"`
	// DryRun is true when nothing was to be applied.
	DryRun bool `json:"dry_run"`
	// Calls are the Modify calls made, in order; none when nothing differed or on a dry run.
	Calls []string `json:"calls"`
	// Verified is true when the target group was read running the config: nothing differed, or
	// the changes were applied and read back. False on a dry run with changes, and when
	// Provision failed on the way (its error says where), the Calls made standing.
	Verified bool `json:"verified"`
}

// Changes are the fields that differ.
func (d Diff) Changes() []Change {
	var out []Change
	for _, f := range d.Fields {
		if f.Differs {
			out = append(out, f)
		}
	}
	return out
}

// NoChanges reports whether the target group already runs the config.
func (d Diff) NoChanges() bool { return len(d.Changes()) == 0 }

// WriteTable writes the diff as a table (field, live, config) and one line saying what was
// done.
func (d Diff) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tLIVE\tCONFIG\t")
	for _, f := range d.Fields {
		mark := ""
		if f.Differs {
			mark = "← change"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Key, f.Live, f.Config, mark)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	n := len(d.Changes())
	var err error
	switch {
	case n == 0:
		_, err = fmt.Fprintf(w, "no changes: target group %s already runs the config\n", d.TargetGroupARN)
	case d.DryRun:
		_, err = fmt.Fprintf(w, "dry run: %d change(s) not applied to %s\n", n, d.TargetGroupARN)
	case !d.Verified:
		made := strings.Join(d.Calls, ", ")
		if made == "" {
			made = "none answered"
		}
		_, err = fmt.Fprintf(w, "failed: %d change(s) to %s not applied and verified (Modify calls answered: %s); see the error\n",
			n, d.TargetGroupARN, made)
	default:
		_, err = fmt.Fprintf(w, "applied %d change(s) to %s (%s), read back and verified\n",
			n, d.TargetGroupARN, strings.Join(d.Calls, ", "))
	}
	return err
}

// Provision makes the target group of b run b's numbers. It refuses values outside AWS's
// ranges before any call (Check), reads what the target group runs (Live), computes the
// field-by-field diff and, unless dryRun, applies only what differs: ModifyTargetGroup for the
// health check (interval, timeout, thresholds, path, matcher 200, port traffic-port, protocol
// HTTP, sent together so AWS checks timeout < interval on the whole) and ModifyTargetGroupAttributes for the attributes that
// differ (deregistration delay; slow start when the config sets it or the live group has one).
// It then reads back and verifies. A second run finds nothing to change and makes no Modify
// call.
func Provision(ctx context.Context, api API, b config.Balancer, dryRun bool) (Diff, error) {
	if err := Check(b); err != nil {
		return Diff{}, err
	}
	live, err := Live(ctx, api, b.TargetGroupARN)
	if err != nil {
		return Diff{}, err
	}
	wanted := Wanted(b)
	d := Diff{TargetGroupARN: b.TargetGroupARN, DryRun: dryRun, Calls: []string{}, Fields: wanted.diff(live)}
	if dryRun || d.NoChanges() {
		d.Verified = d.NoChanges()
		return d, nil
	}

	if healthCheckDiffers(wanted, live) {
		_, err := api.ModifyTargetGroup(ctx, &elbv2.ModifyTargetGroupInput{
			TargetGroupArn:             aws.String(b.TargetGroupARN),
			HealthCheckPath:            aws.String(wanted.HealthPath),
			HealthCheckIntervalSeconds: aws.Int32(int32(wanted.Interval.Seconds())),
			HealthCheckTimeoutSeconds:  aws.Int32(int32(wanted.Timeout.Seconds())),
			HealthyThresholdCount:      aws.Int32(int32(wanted.HealthyThreshold)),
			UnhealthyThresholdCount:    aws.Int32(int32(wanted.UnhealthyThreshold)),
			Matcher:                    &types.Matcher{HttpCode: aws.String(wanted.Matcher)},
			HealthCheckPort:            aws.String(wanted.HealthCheckPort),
			HealthCheckProtocol:        types.ProtocolEnum(wanted.HealthCheckProtocol),
		})
		if err != nil {
			done := "nothing was changed"
			if !refused(err) {
				done = unknownOutcome
			}
			return d, fmt.Errorf("target group %s: ModifyTargetGroup failed, %s: %w", b.TargetGroupARN, done, err)
		}
		d.Calls = append(d.Calls, "ModifyTargetGroup")
	}
	var attrs []types.TargetGroupAttribute
	if wanted.DeregistrationDelay != live.DeregistrationDelay {
		attrs = append(attrs, secondsAttr(AttrDeregistrationDelay, int(wanted.DeregistrationDelay.Seconds())))
	}
	if wanted.SlowStart != live.SlowStart {
		attrs = append(attrs, secondsAttr(AttrSlowStart, int(wanted.SlowStart.Seconds())))
	}
	if len(attrs) > 0 {
		_, err := api.ModifyTargetGroupAttributes(ctx, &elbv2.ModifyTargetGroupAttributesInput{
			TargetGroupArn: aws.String(b.TargetGroupARN), Attributes: attrs,
		})
		if err != nil {
			done := "nothing was changed"
			switch {
			case !refused(err):
				done = unknownOutcome
			case len(d.Calls) > 0:
				done = "the health check was already changed (ModifyTargetGroup); run provision again"
			}
			return d, fmt.Errorf("target group %s: ModifyTargetGroupAttributes failed, %s: %w", b.TargetGroupARN, done, err)
		}
		d.Calls = append(d.Calls, "ModifyTargetGroupAttributes")
	}

	after, err := Live(ctx, api, b.TargetGroupARN)
	if err != nil {
		return d, fmt.Errorf("applied %s but could not read the target group back: %w", strings.Join(d.Calls, ", "), err)
	}
	for _, c := range wanted.diff(after) {
		if c.Differs {
			return d, fmt.Errorf("applied %s but target group %s still differs: %s: config %s, live target group %s",
				strings.Join(d.Calls, ", "), b.TargetGroupARN, c.Key, c.Config, c.Live)
		}
	}
	d.Verified = true
	return d, nil
}

// unknownOutcome is what a Modify call that got no answer from ELBv2 did: it may have been applied.
const unknownOutcome = "ELBv2 gave no answer, so the change may or may not have been applied; " +
	"run provision --dry-run to see what the target group runs now, then provision again"

// refused reports whether err is ELBv2's own refusal of a call (AccessDenied, ValidationError,
// TargetGroupNotFound, …), so the call changed nothing. A call that got no answer (the connection
// dropped after the request went out, or callTimeout passed) or a server fault may have been applied.
func refused(err error) bool {
	var api smithy.APIError
	return errors.As(err, &api) && api.ErrorFault() != smithy.FaultServer
}

func healthCheckDiffers(want, have Timing) bool {
	return want.HealthPath != have.HealthPath || want.Interval != have.Interval || want.Timeout != have.Timeout ||
		want.HealthyThreshold != have.HealthyThreshold || want.UnhealthyThreshold != have.UnhealthyThreshold ||
		want.Matcher != have.Matcher || want.HealthCheckPort != have.HealthCheckPort ||
		want.HealthCheckProtocol != have.HealthCheckProtocol
}

func secondsAttr(key string, n int) types.TargetGroupAttribute {
	return types.TargetGroupAttribute{Key: aws.String(key), Value: aws.String(fmt.Sprint(n))}
}
