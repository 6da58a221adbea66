package rentalcost

import (
	"fmt"
	"math"
)

// Provisioned are provisioned-capacity prices, per capacity unit-hour, Standard
// table class, and the utilisation auto scaling keeps.
type Provisioned struct {
	WCUHour, RCUHour float64
	// Target is auto scaling's target utilisation.
	Target float64
	// Read says when the prices were read.
	Read string
}

// USEast1Provisioned are the us-east-1 provisioned prices the report uses.
var USEast1Provisioned = Provisioned{WCUHour: 0.00065, RCUHour: 0.00013, Target: 0.7, Read: "not read again on 2026-12-01"}

// ProvisionedCost is what a million rentals of one path cost at a steady load on
// provisioned capacity.
type ProvisionedCost struct {
	// WritesPerSecond and ReadsPerSecond are the units the load uses; WCU and RCU the
	// capacity provisioned for them at the target utilisation.
	WritesPerSecond, ReadsPerSecond float64
	WCU, RCU                        float64
	// Hours is how long a million rentals take at the load.
	Hours float64
	// Writes and Reads are the table's cost over those hours; Rest the Lambda and
	// API Gateway costs of the same rentals, batched.
	Writes, Reads float64
	Rest          Cost
	// AtFull is the total at 100% utilisation.
	AtFull float64
}

// Total returns the million rentals' cost.
func (c ProvisionedCost) Total() float64 {
	return c.Writes + c.Reads + c.Rest.LambdaRequests + c.Rest.LambdaDuration + c.Rest.APIGateway
}

// ProvisionedFor prices a million rentals of m at load on capacity pv.
func ProvisionedFor(m Measurement, pv Provisioned, p Prices, a Assumptions, load Load) ProvisionedCost {
	u := Batched(UsageOf(m, Sweep, a), m, a, load)
	c := ProvisionedCost{
		WritesPerSecond: u.WriteUnits * load.RentalsPerSecond, ReadsPerSecond: u.ReadUnits * load.RentalsPerSecond,
		Hours: 1e6 / load.RentalsPerSecond / 3600,
		Rest:  u.Price(p, a, 1e6),
	}
	c.WCU, c.RCU = math.Ceil(c.WritesPerSecond/pv.Target), math.Ceil(c.ReadsPerSecond/pv.Target)
	c.Writes, c.Reads = c.WCU*pv.WCUHour*c.Hours, c.RCU*pv.RCUHour*c.Hours
	full := (c.WritesPerSecond*pv.WCUHour + c.ReadsPerSecond*pv.RCUHour) * c.Hours
	c.AtFull = full + c.Rest.LambdaRequests + c.Rest.LambdaDuration + c.Rest.APIGateway
	return c
}

// provisioned writes the approved rental's cost on provisioned capacity at load.
func (r Report) provisioned(p *printer, runs []Measurement, load Load) {
	m, ok := find(runs, Approved)
	if !ok {
		return
	}
	pv := USEast1Provisioned
	c := ProvisionedFor(m, pv, r.Prices, r.Assumptions, load)
	p.f("\n#### On provisioned capacity, at %.0f approved rentals a second\n\n", load.RentalsPerSecond)
	p.f("Arithmetic on the measured units, not a measurement on AWS. Assumed: us-east-1 provisioned prices of $%.5f per write capacity unit-hour and $%.5f per read capacity unit-hour (Standard table class; %s); the approved mix, %.0f write and %.0f read units a second; auto scaling at a %.0f%% target utilisation: %.0f WCU and %.0f RCU, $%.2f + $%.2f an hour; a million rentals take %.2f hours. Lambda and API Gateway as batched above.\n\n",
		pv.WCUHour, pv.RCUHour, pv.Read, c.WritesPerSecond, c.ReadsPerSecond, pv.Target*100, c.WCU, c.RCU, c.WCU*pv.WCUHour, c.RCU*pv.RCUHour, c.Hours)
	p.row("DynamoDB writes", "DynamoDB reads", "Lambda requests", "Lambda duration", "API Gateway", "total")
	p.rule(6)
	p.row(money(c.Writes), money(c.Reads), money(c.Rest.LambdaRequests), money(c.Rest.LambdaDuration), money(c.Rest.APIGateway), fmt.Sprintf("**%s**", money(c.Total())))
	p.f("\nAt 100%% utilisation it would be %s.\n", money(c.AtFull))
}
