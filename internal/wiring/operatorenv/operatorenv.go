// Package operatorenv is the one list of the environment variables the operator CLI
// (cmd/rentalctl) reads: its own, the service's settings it hands to internal/wiring,
// and the AWS SDK's it reads itself. The local runner prints them for its stack,
// ready to paste, and rentalctl's tests hold every variable it reads to this list.
package operatorenv

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
)

// The variables only rentalctl reads: the sweep's trigger, which rebuild pauses.
const (
	ScheduleName  = "SWEEP_SCHEDULE_NAME"
	ScheduleGroup = "SWEEP_SCHEDULE_GROUP"
	RuleName      = "SWEEP_RULE_NAME"
)

// The AWS SDK's variables rentalctl reads itself (its configuration reads more:
// AWS_PROFILE and the rest, as for the AWS CLI).
const (
	AWSEndpoint  = "AWS_ENDPOINT_URL"
	AWSRegion    = "AWS_REGION"
	AWSKeyID     = "AWS_ACCESS_KEY_ID"
	AWSSecretKey = "AWS_SECRET_ACCESS_KEY"
	AWSSession   = "AWS_SESSION_TOKEN"
)

// Setting is one variable rentalctl reads.
type Setting struct {
	Name string
	// Secret reports a value that must not be printed unless it is a documented,
	// public local default.
	Secret bool
}

// Settings returns every variable rentalctl reads, in the order a shell block lists
// them: AWS access, the tables, the deadlines, the process, the payment provider,
// the sweep's trigger. It is a new slice.
func Settings() []Setting {
	return []Setting{
		{Name: AWSEndpoint}, {Name: AWSRegion}, {Name: AWSKeyID}, {Name: AWSSecretKey, Secret: true}, {Name: AWSSession, Secret: true},
		{Name: wiring.EnvEventsTable}, {Name: wiring.EnvDeadlinesTable}, {Name: wiring.EnvDeadlinesShards}, {Name: wiring.EnvMarkerTTL},
		{Name: wiring.EnvPaymentTimeout}, {Name: wiring.EnvStuckGrace}, {Name: wiring.EnvRentalPeriod}, {Name: wiring.EnvStuckRepair}, {Name: wiring.EnvSweepConcurrency}, {Name: wiring.EnvSweepRate},
		{Name: wiring.EnvRecordingMode}, {Name: wiring.EnvRentalPrice}, {Name: wiring.EnvRentalCurrency},
		{Name: paymentfn.EnvProvider}, {Name: paymentfn.EnvProviderTimeout}, {Name: paymentfn.EnvStripeSecretID}, {Name: paymentfn.EnvStripeSecretKey, Secret: true},
		{Name: paymentfn.EnvStripeWebhookSecret, Secret: true}, {Name: paymentfn.EnvStripeAPIURL},
		{Name: ScheduleName}, {Name: ScheduleGroup}, {Name: RuleName},
	}
}

// Names returns the names of Settings, in its order.
func Names() []string {
	var names []string
	for _, s := range Settings() {
		names = append(names, s.Name)
	}
	return names
}
