package rebuild_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge/types"

	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
)

func TestRuleIsDisabledAndEnabled(t *testing.T) {
	ctx := context.Background()
	client := eventbridge.NewFromConfig(emulatortest.Config(t))
	state := func(name string) types.RuleState {
		t.Helper()
		out, err := client.DescribeRule(ctx, &eventbridge.DescribeRuleInput{Name: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		return out.State
	}
	for _, initial := range []types.RuleState{types.RuleStateEnabled, types.RuleStateDisabled} {
		name := emulatortest.TableName(t, "sweep-rule")
		if _, err := client.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), ScheduleExpression: aws.String("rate(1 minute)"), State: initial}); err != nil {
			t.Fatal(err)
		}
		sweep := rebuild.Rule(client, name)
		if disabled, err := sweep.Disabled(ctx); err != nil || disabled != (initial == types.RuleStateDisabled) {
			t.Errorf("%s rule: Disabled = %v, %v", initial, disabled, err)
		}
		if err := sweep.Disable(ctx); err != nil {
			t.Fatal(err)
		}
		if got := state(name); got != types.RuleStateDisabled {
			t.Errorf("%s rule after Disable: %s", initial, got)
		}
		for range 2 {
			if err := sweep.Enable(ctx); err != nil {
				t.Fatal(err)
			}
		}
		if got := state(name); got != types.RuleStateEnabled {
			t.Errorf("%s rule after Enable: %s", initial, got)
		}
	}
	missing := rebuild.Rule(client, "no-such-rule")
	if err := missing.Disable(ctx); err == nil {
		t.Error("disabling a missing rule succeeded")
	}
	if _, err := missing.Disabled(ctx); err == nil {
		t.Error("reading a missing rule succeeded")
	}
}
