// Package lambdas is the one table of the service's Lambda functions: each one's
// name, the package of its main under functions/, whether it consumes the Events
// table's stream, and the builder its main runs. The local runner, the cost bench,
// the start-up bench and the template test read it; each main names its own builder
// alone (a test holds it to this table), since importing the table would link every
// function into every binary.
package lambdas

import (
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
	"github.com/bikerental/bikerental/internal/wiring/paymentfn"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
)

// The functions' names: their directories under functions/, and template.yaml's
// logical ids with "Function" after them, capitalised.
const (
	Command   = "command"
	Process   = "process"
	Projector = "projector"
	Sweep     = "sweep"
)

// Function is one Lambda function.
type Function struct {
	Name string
	// Package is its main's package, relative to the repository's root.
	Package string
	// Stream reports a consumer of the Events table's stream.
	Stream bool
	// Build is the builder its main runs (wiring.Run).
	Build wiring.Builder
}

// All returns every function, in a new slice.
func All() []Function {
	return []Function{
		{Command, "./functions/command", false, commandfn.CommandFunction},
		{Process, "./functions/process", true, paymentfn.ProcessFunction},
		{Projector, "./functions/projector", true, projectorfn.ProjectorFunction},
		{Sweep, "./functions/sweep", false, paymentfn.SweepFunction},
	}
}
