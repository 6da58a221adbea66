package iamtest_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	schedtypes "github.com/aws/aws-sdk-go-v2/service/scheduler/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/testkit/iamtest"
)

// TestActionsNameWhatIAMAuthorizes runs calls against the emulator and checks the
// actions and resources recorded: a transaction's items as their single-item actions
// on their tables, an index query on the index, a schedule with the iam:PassRole its
// target role needs, a secret by the ARN the answer gives, and a call it has no rule
// for without a resource.
func TestActionsNameWhatIAMAuthorizes(t *testing.T) {
	ctx := context.Background()
	cfg := emulatortest.Config(t)
	rec := &iamtest.Actions{Account: "123456789012"}
	c := cfg.Copy()
	c.APIOptions = append(slices.Clone(cfg.APIOptions), rec.Middleware("fn"))
	db := dynamodb.NewFromConfig(c)
	events := emulatortest.CreateTable(t, emulatortest.DynamoDB(t), schema.Events, "events")
	pending := emulatortest.CreateTable(t, emulatortest.DynamoDB(t), schema.Deadlines, "pending")
	table := func(name string) string { return "arn:aws:dynamodb:us-east-1:123456789012:table/" + name }

	item := map[string]types.AttributeValue{schema.EventsStreamID: &types.AttributeValueMemberS{Value: "s"}, schema.EventsVersion: &types.AttributeValueMemberN{Value: "1"}}
	row := map[string]types.AttributeValue{schema.DeadlineKey: &types.AttributeValueMemberS{Value: "r"}}
	if _, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
		{Put: &types.Put{TableName: aws.String(events), Item: item}},
		{ConditionCheck: &types.ConditionCheck{TableName: aws.String(pending), Key: row, ConditionExpression: aws.String("attribute_not_exists(#r)"),
			ExpressionAttributeNames: map[string]string{"#r": schema.DeadlineKey}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Query(ctx, &dynamodb.QueryInput{TableName: aws.String(pending), IndexName: aws.String(schema.DeadlinesByDue),
		KeyConditionExpression: aws.String("#s = :s"), ExpressionAttributeNames: map[string]string{"#s": schema.DeadlineKindShard},
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: "0"}}}); err != nil {
		t.Fatal(err)
	}
	group := emulatortest.TableName(t, "group")
	sched := scheduler.NewFromConfig(c)
	if _, err := scheduler.NewFromConfig(cfg).CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	role := "arn:aws:iam::123456789012:role/scheduler"
	if _, err := sched.CreateSchedule(ctx, &scheduler.CreateScheduleInput{Name: aws.String("x"), GroupName: aws.String(group),
		ScheduleExpression: aws.String("at(2030-01-01T00:00:00)"), FlexibleTimeWindow: &schedtypes.FlexibleTimeWindow{Mode: schedtypes.FlexibleTimeWindowModeOff},
		Target: &schedtypes.Target{Arn: aws.String("arn:aws:lambda:us-east-1:123456789012:function:f"), RoleArn: aws.String(role)}}); err != nil {
		t.Fatal(err)
	}
	secret := emulatortest.TableName(t, "secret")
	created, err := secretsmanager.NewFromConfig(cfg).CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(secret), SecretString: aws.String("s")})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := secretsmanager.NewFromConfig(c).GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(secret)}); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatal(err)
	}

	var got []string
	for _, u := range rec.Uses() {
		got = append(got, u.String())
	}
	want := []string{
		"fn: dynamodb:PutItem on " + table(events) + " [DynamoDB TransactWriteItems]",
		"fn: dynamodb:ConditionCheckItem on " + table(pending) + " [DynamoDB TransactWriteItems]",
		"fn: dynamodb:Query on " + table(pending) + "/index/" + schema.DeadlinesByDue + " [DynamoDB Query]",
		"fn: scheduler:CreateSchedule on arn:aws:scheduler:us-east-1:123456789012:schedule/" + group + "/x [Scheduler CreateSchedule]",
		"fn: iam:PassRole on " + role + " (iam:PassedToService=scheduler.amazonaws.com) [Scheduler CreateSchedule]",
		"fn: secretsmanager:GetSecretValue on " + aws.ToString(created.ARN) + " [Secrets Manager GetSecretValue]",
		"fn: dynamodb:ListTables on  [DynamoDB ListTables]",
	}
	if !slices.Equal(got, want) {
		t.Errorf("recorded:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(aws.ToString(created.ARN), secret+"-") {
		t.Errorf("the secret's ARN %s has no suffix after its name", aws.ToString(created.ARN))
	}
}
