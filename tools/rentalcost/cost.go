package rentalcost

import (
	"time"

	"github.com/bikerental/bikerental/deadlines/dynamo/capacity"
	"github.com/bikerental/bikerental/internal/app/eventfilter"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
)

// Prices are on-demand list prices in US dollars per unit, for one region.
type Prices struct {
	Region string
	// Read is the day the prices were read from their pages.
	Read string
	// DynamoDB on-demand, Standard table class: per write and per read request unit.
	WriteRequestUnit, ReadRequestUnit float64
	// Lambda: per request, and per GB-second of duration on arm64 (first tier).
	LambdaRequest, LambdaGBSecond float64
	// API Gateway HTTP API: per request (first 300 million a month, up to 512 KB).
	HTTPAPIRequest float64
	// EventBridge Scheduler: per invocation (a schedule firing), beyond 14 million
	// free a month.
	SchedulerInvocation float64
	// Step Functions Standard: per state transition, beyond 4,000 free a month.
	StateTransition float64
	// Sources name the pages the prices come from.
	Sources []string
}

// USEast1 are the us-east-1 prices this package reports with.
var USEast1 = Prices{
	Region: "us-east-1 (N. Virginia)",
	Read:   "2026-11-30",
	// $0.625 per million WRU, $0.125 per million RRU (on-demand throughput prices
	// since the 50% reduction of 1 November 2024).
	WriteRequestUnit: 0.625 / 1e6,
	ReadRequestUnit:  0.125 / 1e6,
	// $0.20 per million requests; $0.0000133334 per GB-second (Arm, first 7.5
	// billion GB-seconds a month).
	LambdaRequest:  0.20 / 1e6,
	LambdaGBSecond: 0.0000133334,
	// $1.00 per million HTTP API requests (first 300 million a month).
	HTTPAPIRequest: 1.00 / 1e6,
	// $1.00 per million scheduled invocations, after 14 million free a month.
	SchedulerInvocation: 1.00 / 1e6,
	// $0.025 per 1,000 state transitions.
	StateTransition: 0.025 / 1e3,
	Sources: []string{
		"DynamoDB on-demand: https://aws.amazon.com/dynamodb/pricing/on-demand/ (rates as restated after the November 2024 reduction, e.g. airbyte.com/data-engineering-resources/dynamodb-pricing, July 2025)",
		"DynamoDB Streams reads by Lambda triggers are free: same page, section DynamoDB Streams (quoted in the Developer Guide, \"Evaluate your DynamoDB streams usage\")",
		"Lambda: https://aws.amazon.com/lambda/pricing/ (Arm duration tiers as listed e.g. by cloudchipr.com, 2024)",
		"API Gateway: https://aws.amazon.com/api-gateway/pricing/ (HTTP APIs)",
		"EventBridge Scheduler: https://aws.amazon.com/eventbridge/pricing/ (Scheduler section; as summarised by cloudburn.io, March 2026)",
		"Step Functions: https://aws.amazon.com/step-functions/pricing/ (Standard workflows, US East (N. Virginia) row)",
	},
}

// Assumptions are what the cost model cannot measure locally.
type Assumptions struct {
	// MemoryMB is every function's memory (template.yaml, Globals: 256).
	MemoryMB int
	// DynamoDBCall is the time a function waits for one DynamoDB request on AWS, in
	// the region; OtherCall for one EventBridge Scheduler or Step Functions request;
	// Overhead the handler's own time per invocation.
	DynamoDBCall, OtherCall, Overhead time.Duration
	// SweepsPerMonth is how often the sweep runs: rate(1 minute) over 30 days.
	SweepsPerMonth float64
}

// Assumed are the assumptions this package reports with.
var Assumed = Assumptions{
	MemoryMB:       256,
	DynamoDBCall:   6 * time.Millisecond,
	OtherCall:      20 * time.Millisecond,
	Overhead:       2 * time.Millisecond,
	SweepsPerMonth: 60 * 24 * 30,
}

// Usage is what one rental uses, in the billed units of each service.
type Usage struct {
	WriteUnits, ReadUnits float64
	HTTPRequests          float64
	// Invocations of Lambda functions, and their billed time (Duration).
	Invocations float64
	Duration    time.Duration
	// SchedulerInvocations and StateTransitions of the alternatives.
	SchedulerInvocations, StateTransitions float64
}

// Add returns u and v together.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		WriteUnits: u.WriteUnits + v.WriteUnits, ReadUnits: u.ReadUnits + v.ReadUnits,
		HTTPRequests: u.HTTPRequests + v.HTTPRequests, Invocations: u.Invocations + v.Invocations,
		Duration:             u.Duration + v.Duration,
		SchedulerInvocations: u.SchedulerInvocations + v.SchedulerInvocations,
		StateTransitions:     u.StateTransitions + v.StateTransitions,
	}
}

// Cost is a usage priced, in US dollars, by service.
type Cost struct {
	DynamoDBWrites, DynamoDBReads  float64
	LambdaRequests, LambdaDuration float64
	APIGateway                     float64
	Scheduler, StepFunctions       float64
}

// Total returns the sum of every line.
func (c Cost) Total() float64 {
	return c.DynamoDBWrites + c.DynamoDBReads + c.LambdaRequests + c.LambdaDuration + c.APIGateway + c.Scheduler + c.StepFunctions
}

// Price returns what n times u costs at p, with functions of a's memory.
func (u Usage) Price(p Prices, a Assumptions, n float64) Cost {
	gbSeconds := u.Duration.Seconds() * float64(a.MemoryMB) / 1024
	return Cost{
		DynamoDBWrites: n * u.WriteUnits * p.WriteRequestUnit,
		DynamoDBReads:  n * u.ReadUnits * p.ReadRequestUnit,
		LambdaRequests: n * u.Invocations * p.LambdaRequest,
		LambdaDuration: n * gbSeconds * p.LambdaGBSecond,
		APIGateway:     n * u.HTTPRequests * p.HTTPAPIRequest,
		Scheduler:      n * u.SchedulerInvocations * p.SchedulerInvocation,
		StepFunctions:  n * u.StateTransitions * p.StateTransition,
	}
}

// Design is a way of giving up on payments that never arrive.
type Design string

// The designs compared.
const (
	// Sweep is the project's: the to-do table projection and a sweep once a
	// minute.
	Sweep Design = "projection + sweep (this project)"
	// StepFunctions is one Standard execution per rental: Wait for the timeout,
	// then a Task invoking a function that sends CancelRentalPayment. The process
	// starts it on BikeRequested (execution name: the rental id) and stops it when
	// the payment settles; no projection, no sweep.
	StepFunctions Design = "Step Functions Standard, one execution per rental"
	// OneTimeSchedule is one EventBridge Scheduler one-time schedule per payment:
	// the projector creates it on PaymentPrepared (at prepared-at plus the timeout,
	// deleting itself after it fires) and deletes it when the payment settles; when
	// it fires it invokes a function that sends CancelRentalPayment. No
	// to-do table rows, no sweep.
	OneTimeSchedule Design = "EventBridge Scheduler, one schedule per payment"
)

// Designs returns the designs in the order they are reported.
func Designs() []Design { return []Design{Sweep, StepFunctions, OneTimeSchedule} }

// UsageOf returns what one rental of m uses under design d, from what m measured
// under the project's design: the Events table's work and the API are the same in
// every design; what keeps the deadline differs. Stream consumers are counted at one
// invocation per record of a type their filter lets through, the most Lambda can
// make (at low traffic; busier streams batch records, up to BatchSize 100, and
// invoke less).
func UsageOf(m Measurement, d Design, a Assumptions) Usage {
	calls := m.PerRental()
	all := capacity.Total(calls)
	byFunction := capacity.GroupBy(calls, func(c capacity.Call, _ capacity.Usage) string { return c.Function })
	pending := capacity.GroupBy(calls, func(c capacity.Call, u capacity.Usage) string {
		if u.Table != "" && c.Function == FunctionProjector {
			return "projection"
		}
		return ""
	})["projection"]
	// Each consumer is woken only for the records of the types it handles (the event
	// source mappings' filters, internal/app/eventfilter).
	woken := func(consumer string) float64 {
		n := 0
		for _, e := range m.Events {
			if eventfilter.Wakes(consumer, e.Type) {
				n++
			}
		}
		return float64(n)
	}
	records, projected := woken(eventfilter.Process), woken(eventfilter.Projector)
	// Of the projector's records, those that open and close a rental's process
	// (stuck rentals, docs/decisions/0007-stuck-rentals.md): the alternative designs
	// below keep no projection and are compared without them.
	opening := 0.0
	for _, e := range m.Events {
		if e.Type == (rental.BikeRequested{}).EventType() || rentalpayment.Ends(e.Type) {
			opening++
		}
	}
	u := Usage{
		WriteUnits:   float64(all.AllWriteUnits()),
		ReadUnits:    all.ReadUnits,
		HTTPRequests: float64(m.HTTPRequests),
	}
	// The command function serves each API request; the process takes its records.
	invocations := float64(m.HTTPRequests) + records
	dynamoCalls := all.Calls
	other := 0
	timedOut := m.Path == TimedOut
	switch d {
	case Sweep:
		invocations += projected // the projector takes its records
		// The sweep's run is amortized (SweepFixed), not a rental's; its
		// cancellation work is the rental's and is in dynamoCalls.
	case StepFunctions:
		u.WriteUnits -= float64(pending.AllWriteUnits())
		u.ReadUnits -= pending.ReadUnits
		dynamoCalls -= byFunction[FunctionProjector].Calls
		other += 2             // StartExecution on BikeRequested, StopExecution on settlement
		u.StateTransitions = 1 // Wait
		if timedOut {
			u.StateTransitions++ // the Task that gives up
			invocations++        // the function it invokes
		}
	case OneTimeSchedule:
		invocations += projected - opening // the projector still takes its payments' records
		u.WriteUnits -= float64(pending.AllWriteUnits())
		u.ReadUnits -= pending.ReadUnits
		dynamoCalls -= byFunction[FunctionProjector].Calls
		other += 2 // CreateSchedule on PaymentPrepared, DeleteSchedule on settlement
		if timedOut {
			u.SchedulerInvocations = 1
			invocations++ // the function the schedule invokes
		}
	}
	u.Invocations = invocations
	u.Duration = time.Duration(invocations)*a.Overhead + time.Duration(dynamoCalls)*a.DynamoDBCall + time.Duration(other)*a.OtherCall
	return u
}

// SweepRun is what one run of the sweep's search costs, whatever it finds: one
// invocation and one query page per shard of the index (each at least half a read
// unit), as measured on the timed-out path.
func SweepRun(m Measurement, a Assumptions) Usage {
	var search []capacity.Call
	for _, c := range m.Calls {
		if Amortized(c) {
			search = append(search, c)
		}
	}
	t := capacity.Total(search)
	return Usage{
		ReadUnits: t.ReadUnits, Invocations: 1, SchedulerInvocations: 1,
		Duration: a.Overhead + time.Duration(t.Calls)*a.DynamoDBCall,
	}
}

// PreciseExtra is what the precise deadline mode adds per payment, on top of the
// project's design, when a share timeout of payments time out: the projector calls
// CreateSchedule once per payment and DeleteSchedule once when it settles; a payment
// that times out has its schedule fire once, which invokes the sweep function, which
// reads the payment's to-do table row (one strongly consistent GetItem of a row
// of about rowBytes) before the cancellation every design does.
func PreciseExtra(timeout float64, rowBytes int, a Assumptions) Usage {
	return Usage{
		Duration: 2*a.OtherCall + time.Duration(timeout*float64(a.Overhead+a.DynamoDBCall)),
		// Scheduler's CreateSchedule and DeleteSchedule requests have no price of
		// their own on the pricing page; firing does.
		SchedulerInvocations: timeout,
		Invocations:          timeout,
		ReadUnits:            timeout * capacity.ReadUnits(rowBytes, capacity.Strong),
	}
}

// Load is a steady rate of rentals, for the cost of the stream consumers' batching.
// Lambda polls each shard of a DynamoDB stream 4 times a second (its base rate; the
// event source mappings set MaximumBatchingWindowInSeconds 0) and invokes a
// consumer once per poll that finds a record its filter lets through, with every
// such record since the last poll in one batch (BatchSize 100 is not reached at
// these rates). So a consumer is invoked at most Shards × PollsPerSecond times a
// second, however many records it takes, as long as each invocation ends within a
// poll interval.
type Load struct {
	RentalsPerSecond float64
	// Shards is how many shards the Events table's stream has: one per table
	// partition, and a partition takes up to 1,000 write units a second.
	Shards         float64
	PollsPerSecond float64
}

// AtHundredPerSecond is the load the batched figures are stated at: 100 rentals a
// second writing about 2,100 write units a second, so at least three partitions;
// four stream shards assumed.
var AtHundredPerSecond = Load{RentalsPerSecond: 100, Shards: 4, PollsPerSecond: 4}

// Batched returns u, the usage of rental m with one invocation per stream record,
// with the stream consumers' invocations as batching makes them at load: each
// consumer's records per rental, or its invocations a second shared among the
// rentals of that second, whichever is fewer. The per-invocation overhead shrinks
// with them; the DynamoDB calls do not.
func Batched(u Usage, m Measurement, a Assumptions, load Load) Usage {
	perRental := load.Shards * load.PollsPerSecond / load.RentalsPerSecond
	saved := 0.0
	for _, consumer := range eventfilter.Consumers() {
		records := 0.0
		for _, e := range m.Events {
			if eventfilter.Wakes(consumer, e.Type) {
				records++
			}
		}
		if records > perRental {
			saved += records - perRental
		}
	}
	u.Invocations -= saved
	u.Duration -= time.Duration(saved * float64(a.Overhead))
	return u
}
