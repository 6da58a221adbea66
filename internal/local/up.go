package local

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/bikerental/bikerental/internal/deadline"
	"github.com/bikerental/bikerental/internal/emulator"
	"github.com/bikerental/bikerental/internal/stripemock"
	"github.com/bikerental/bikerental/internal/wiring"
)

// Up is a local stack brought up by Start: the emulator it started (if any), the
// tables, and the functions built in this process.
type Up struct {
	*Stack
	emulator *emulator.Server
	stripe   *stripemock.Server
}

// Start brings a local stack up from the environment getenv describes: it starts
// moto's server unless AWS_ENDPOINT_URL is set (every client then goes where it
// points; set and empty means AWS itself, with the credentials the SDK finds),
// creates the tables named by EVENTS_TABLE and PENDING_TABLE, and builds the four
// functions in this process with the same environment. progress receives one line per
// step. Stop it with Stop.
func Start(ctx context.Context, getenv wiring.Getenv, interval time.Duration, logger *slog.Logger, progress io.Writer) (*Up, error) {
	up := &Up{}
	getenv = withDeadlineDefaults(getenv)
	getenv, stripe, err := withStripe(ctx, getenv, progress)
	if err != nil {
		return nil, err
	}
	up.stripe = stripe
	mode, err := deadline.ParseMode(getenv(wiring.EnvDeadlineMode))
	if err != nil {
		up.Stop()
		return nil, fmt.Errorf("%s: %w", wiring.EnvDeadlineMode, err)
	}
	stack := &Stack{EventsTable: getenv(wiring.EnvEventsTable), PendingTable: getenv(wiring.EnvPendingTable), SweepInterval: interval, Logger: logger,
		OperatorScope: getenv(wiring.EnvOperatorScope)}
	if endpoint, set := os.LookupEnv("AWS_ENDPOINT_URL"); set {
		where := endpoint
		if where == "" {
			where = "AWS itself (AWS_ENDPOINT_URL is set and empty)"
		}
		fmt.Fprintf(progress, "AWS endpoint: %s\n", where)
		if stack.AWS, err = config.LoadDefaultConfig(ctx); err != nil {
			err = fmt.Errorf("load AWS configuration: %w", err)
		}
	} else {
		fmt.Fprintln(progress, "starting the local AWS emulator (moto_server)...")
		if up.emulator, err = emulator.Start(ctx); err != nil {
			return nil, err
		}
		fmt.Fprintf(progress, "AWS emulator: %s\n", up.emulator.Endpoint)
		if stack.AWS, err = up.emulator.Config(ctx); err == nil {
			err = CreateSweepSchedule(ctx, scheduler.NewFromConfig(stack.AWS))
		}
	}
	if err == nil {
		err = CreateTables(ctx, stack.AWS, stack.EventsTable, stack.PendingTable)
	}
	if err == nil && mode == deadline.ModePrecise {
		stack.DeadlineGroup = getenv(wiring.EnvDeadlineGroup)
		fmt.Fprintf(progress, "precise deadlines: one-time schedules in group %s\n", stack.DeadlineGroup)
		err = CreateDeadlineGroup(ctx, scheduler.NewFromConfig(stack.AWS), stack.DeadlineGroup)
	}
	if err == nil {
		stack.Functions, err = InProcessFunctions(ctx, stack.AWS, getenv, logger)
	}
	if err != nil {
		up.Stop()
		return nil, err
	}
	up.Stack = stack
	return up, nil
}

// Died is closed if the emulator Start started stops by itself; Reason then says why.
// It is nil when no emulator was started.
func (u *Up) Died() <-chan struct{} {
	if u.emulator == nil {
		return nil
	}
	return u.emulator.Exited()
}

// Reason says how the emulator ended.
func (u *Up) Reason() string { return u.emulator.ExitReason() }

// Stop stops the emulator and stripe-mock Start started, if any. Safe to call more
// than once.
func (u *Up) Stop() {
	if u.emulator != nil {
		u.emulator.Stop()
	}
	if u.stripe != nil {
		u.stripe.Stop()
	}
}
