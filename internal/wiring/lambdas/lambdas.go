// Package lambdas is the one table of the service's Lambda functions: each one's
// name, the package of its main under functions/, whether it consumes the Events
// table's stream, and the builder its main runs. The local runner, the cost bench,
// the start-up bench and the template test read it; each main names its own builder
// alone (a test holds it to this table), since importing the table would link every
// function into every binary.
package lambdas

import (
	"fmt"

	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/commandfn"
	"github.com/bikerental/bikerental/internal/wiring/processfn"
	"github.com/bikerental/bikerental/internal/wiring/projectorfn"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
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
	// Build is the builder its main runs (wiring.Run). It runs Check first.
	Build wiring.Builder
	// Check validates every setting Build reads, touching nothing: what the local
	// runner checks for every function before it starts anything.
	Check func(wiring.Getenv) error
}

// All returns every function, in a new slice.
func All() []Function {
	return []Function{
		{Command, "./functions/command", false, commandfn.CommandFunction, commandfn.Check},
		{Process, "./functions/process", true, processfn.ProcessFunction, processfn.Check},
		{Projector, "./functions/projector", true, projectorfn.ProjectorFunction, projectorfn.Check},
		{Sweep, "./functions/sweep", false, sweepfn.SweepFunction, sweepfn.Check},
	}
}

// Check runs every function's Check on getenv, and returns the first error, naming
// the function and the setting.
func Check(getenv wiring.Getenv) error {
	for _, f := range All() {
		if err := f.Check(getenv); err != nil {
			return fmt.Errorf("%s function: %w", f.Name, err)
		}
	}
	return nil
}
