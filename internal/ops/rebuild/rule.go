package rebuild

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
)

// Rules is the part of the EventBridge client a Rule uses. *eventbridge.Client is
// one.
type Rules interface {
	DescribeRule(ctx context.Context, in *eventbridge.DescribeRuleInput, optFns ...func(*eventbridge.Options)) (*eventbridge.DescribeRuleOutput, error)
	DisableRule(ctx context.Context, in *eventbridge.DisableRuleInput, optFns ...func(*eventbridge.Options)) (*eventbridge.DisableRuleOutput, error)
	EnableRule(ctx context.Context, in *eventbridge.EnableRuleInput, optFns ...func(*eventbridge.Options)) (*eventbridge.EnableRuleOutput, error)
}

var _ Rules = (*eventbridge.Client)(nil)

// RuleDisabled reports whether the rule is disabled.
func RuleDisabled(ctx context.Context, client Rules, name string) (bool, error) {
	r, err := client.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(name)})
	if err != nil {
		return false, fmt.Errorf("rebuild: read rule %s: %w", name, err)
	}
	return r.State == types.RuleStateDisabled, nil
}

// EnableRule enables the rule.
func EnableRule(ctx context.Context, client Rules, name string) error {
	if _, err := client.EnableRule(ctx, &eventbridge.EnableRuleInput{Name: aws.String(name)}); err != nil {
		return fmt.Errorf("rebuild: enable rule %s: %w", name, err)
	}
	return nil
}

// Rule is the Switch of the EventBridge rule name (on the default event bus), for
// deployments whose sweep runs on a rule (SweepTrigger=rule).
func Rule(client Rules, name string) Switch { return rule{client: client, name: name} }

type rule struct {
	client Rules
	name   string
}

func (r rule) Disabled(ctx context.Context) (bool, error) { return RuleDisabled(ctx, r.client, r.name) }

func (r rule) Disable(ctx context.Context) error {
	if _, err := r.client.DisableRule(ctx, &eventbridge.DisableRuleInput{Name: aws.String(r.name)}); err != nil {
		return fmt.Errorf("rebuild: disable rule %s: %w", r.name, err)
	}
	return nil
}

func (r rule) Enable(ctx context.Context) error { return EnableRule(ctx, r.client, r.name) }
