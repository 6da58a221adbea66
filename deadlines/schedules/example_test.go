package schedules_test

import (
	"fmt"
	"os"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/deadlines/memory"
	"github.com/bikerental/bikerental/deadlines/schedules"
)

// The projector of a service whose unconfirmed orders are cancelled on time: the
// projection (the DynamoDB table's in a service) keeps the rows, and a one-time
// schedule per outstanding order invokes the sweep function for that order at its
// due time. The handler of the projector's Lambda is then
// awslambda.Projector(projection, decode).
func ExampleNew() {
	cfg := aws.Config{Region: "eu-west-1"} // config.LoadDefaultConfig in a service
	projection, err := schedules.New(memory.New(testKinds(), 1), schedules.Config{
		Client:        scheduler.NewFromConfig(cfg),
		Group:         os.Getenv("DEADLINES_SCHEDULE_GROUP"),
		TargetARN:     os.Getenv("SWEEP_FUNCTION_ARN"),
		RoleARN:       os.Getenv("SCHEDULER_ROLE_ARN"),
		DeadLetterARN: os.Getenv("DEADLINES_DLQ_ARN"),
		Kinds:         testKinds(),
		Precise:       []string{"unconfirmed-order"},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = projection
}

func ExampleName() {
	fmt.Println(schedules.Name("order-17"))
	fmt.Println(schedules.Name("unconfirmed-order#order-17"))
	// Output:
	// order-17
	// unconfirmed-order_order-17.dUCsDeiuWrSisf08anrg
}
