package local

import (
	"fmt"
	"io"
	"regexp"
	"strings"

	"github.com/bikerental/bikerental/internal/dev/emulator"
	"github.com/bikerental/bikerental/internal/dev/stripemock"
	"github.com/bikerental/bikerental/internal/wiring/operatorenv"
)

// operatorAccess is how rentalctl reaches the stack's AWS: the endpoint (empty for
// AWS itself), whether the emulator's dummy credentials do, and whether the stack
// created the sweep's schedule (SweepSchedule) there.
type operatorAccess struct {
	endpoint      string
	emulatorCreds bool
	schedule      bool
}

// OperatorEnv writes to w a shell block, ready to paste, that points rentalctl at
// this stack: an export of every variable operatorenv lists that the stack has a
// value for, the same value its functions read, and an unset of the others, so that
// nothing of a shell set up for another stack is left. A secret is printed only when
// it is a documented public local default (the emulator's credentials, the local
// webhook secrets, stripe-mock's key); otherwise the block refers to the variable as
// the shell has it ("$NAME").
func (u *Up) OperatorEnv(w io.Writer) {
	values, shells := u.operatorValues()
	var unset []string
	for _, s := range operatorenv.Settings() {
		v := values[s.Name]
		switch {
		case shells[s.Name] || (s.Secret && v != "" && !publicLocal(v)):
			fmt.Fprintf(w, "export %s=\"$%s\"\n", s.Name, s.Name)
		case v == "":
			unset = append(unset, s.Name)
		default:
			fmt.Fprintf(w, "export %s=%s\n", s.Name, shellQuote(v))
		}
	}
	if len(unset) > 0 {
		fmt.Fprintf(w, "unset %s\n", strings.Join(unset, " "))
	}
}

// operatorValues are the stack's values of the variables rentalctl reads, and the
// variables whose value is the shell's own (the AWS SDK's credentials, off the
// emulator).
func (u *Up) operatorValues() (values map[string]string, shells map[string]bool) {
	values, shells = map[string]string{}, map[string]bool{}
	for _, name := range operatorenv.Names() {
		values[name] = u.env(name)
	}
	values[operatorenv.AWSEndpoint] = u.access.endpoint
	values[operatorenv.AWSRegion] = u.Direct.Region
	if u.access.emulatorCreds {
		values[operatorenv.AWSKeyID], values[operatorenv.AWSSecretKey], values[operatorenv.AWSSession] = emulator.AccessKey, emulator.SecretKey, ""
	} else {
		// The SDK's own credentials, as the stack found them: the shell's.
		for _, name := range []string{operatorenv.AWSKeyID, operatorenv.AWSSecretKey, operatorenv.AWSSession} {
			shells[name] = true
		}
	}
	if u.access.schedule {
		values[operatorenv.ScheduleName] = SweepSchedule
	}
	return values, shells
}

// publicLocal reports a value that is published as a local default, never a secret
// of a real deployment.
func publicLocal(v string) bool {
	switch v {
	case emulator.SecretKey, DefaultWebhookSecret, DefaultStripeWebhookSecret, stripemock.SecretKey:
		return true
	}
	return false
}

var shellSafe = regexp.MustCompile(`^[A-Za-z0-9_./:@%+=,-]+$`)

// shellQuote quotes v for a POSIX shell, unless it needs none: single quotes, in
// which nothing is expanded.
func shellQuote(v string) string {
	if shellSafe.MatchString(v) {
		return v
	}
	return "'" + strings.ReplaceAll(v, "'", `'\''`) + "'"
}
