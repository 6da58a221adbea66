package deadlinebench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime/pprof"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/deadlines/awslambda"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
	"github.com/bikerental/bikerental/internal/wiring/sweepfn"
)

// SweepConfig configures a sweep run.
type SweepConfig struct {
	// Payments is how many outstanding payments fall due together.
	Payments int
	// Concurrencies are the SWEEP_CONCURRENCY values to sweep with, each over its
	// own freshly seeded tables.
	Concurrencies []int
	// Repeat is how many times to go through Concurrencies (1 if zero), round
	// robin, so that a drift in the machine's load spreads over all of them.
	Repeat int
	// ProfileConcurrency is the concurrency whose first sweep is CPU-profiled into
	// Profile (the profile covers that sweep only); a nil Profile profiles nothing.
	ProfileConcurrency int
	Profile            io.Writer
	// ReplayPayments is for how many of each sweep's payments the sweep's calls are
	// then replayed without our code, on the same table at the same concurrency; 0
	// replays none.
	ReplayPayments int
	// CeilingCalls is how many trivial GetItem calls measure the emulator's ceiling,
	// at concurrency 1 and at each of Concurrencies, after the sweeps; 0 measures
	// none.
	CeilingCalls int
	// Timeout is the sweep's PAYMENT_TIMEOUT. The seeded payments were all prepared at
	// the same instant, and the sweep's now is that instant plus Timeout plus 1ms.
	Timeout time.Duration
	// Budget bounds one sweep, as the sweep Lambda function's timeout does (the sweep
	// stops starting work awslambda.DefaultSweepMargin before it).
	Budget time.Duration
	// Getenv is the environment passed on to the stack and the sweep (os.Getenv,
	// usually); nil passes on nothing else.
	Getenv wiring.Getenv
	// Logger receives the stack's and the sweep's logs; nil discards them.
	Logger *slog.Logger
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// SweepRun is one sweep over Payments due payments.
type SweepRun struct {
	Concurrency int
	// Seed is how long seeding that sweep's tables took (not part of Wall).
	Seed time.Duration
	// Wall is how long Sweep took.
	Wall    time.Duration
	Summary awslambda.Summary
	// Calls counts the requests the sweep sent to the emulator, by operation.
	Calls      map[string]int
	TotalCalls int
	// InFlight is the time during which at least one of the sweep's requests was
	// waiting for its answer; Wall minus InFlight is time the emulator, behind its
	// one-request-at-a-time proxy, had nothing of the sweep's to do.
	InFlight time.Duration
	// OwnCPU is the CPU time this process used during the sweep (the sweep, the AWS
	// SDK, and the in-process proxy in front of the emulator); EmulatorCPU is what the
	// emulator's process used. CPUMeasured is false where they could not be read.
	OwnCPU, EmulatorCPU time.Duration
	CPUMeasured         bool
	// Replay is the replay of the sweep's calls for some of its payments, right
	// after it, on the same table at the same concurrency, without our code; nil if
	// none was asked for.
	Replay *Ceiling
}

// Ceiling is how fast the emulator serves a batch of calls, without our code.
type Ceiling struct {
	What        string
	Concurrency int
	Calls       int
	Wall        time.Duration
}

// SweepReport is what a sweep run measured.
type SweepReport struct {
	Payments int
	Runs     []SweepRun
	Ceilings []Ceiling
}

// Sweep brings up a local stack's emulator and tables (without the runner's stream
// mappings or scheduler, so that nothing else loads the emulator). For each
// concurrency (Repeat times, round robin) it seeds fresh tables with cfg.Payments
// rentals whose payments were all prepared at the same instant and are outstanding,
// runs one sweep past their deadline, built as the sweep function builds it
// (sweepfn.New, the sweep function's recipe), and measures it; then it replays the sweep's
// calls for cfg.ReplayPayments of them with none of our code around them, and
// deletes the tables of every run but the last. Last it measures trivial GetItem
// calls on the last run's table. It fails if a sweep does not cancel every payment.
func Sweep(ctx context.Context, cfg SweepConfig) (SweepReport, error) {
	switch {
	case cfg.Payments < 1:
		return SweepReport{}, fmt.Errorf("payments %d: want at least 1", cfg.Payments)
	case len(cfg.Concurrencies) == 0:
		return SweepReport{}, errors.New("no concurrency to sweep with")
	case cfg.Repeat < 0:
		return SweepReport{}, fmt.Errorf("repeat %d: want zero or more", cfg.Repeat)
	case cfg.Timeout <= 0 || cfg.Budget <= 0:
		return SweepReport{}, fmt.Errorf("timeout %s and budget %s: want positive durations", cfg.Timeout, cfg.Budget)
	case cfg.CeilingCalls < 0 || cfg.ReplayPayments < 0:
		return SweepReport{}, fmt.Errorf("ceiling calls %d and replayed payments %d: want zero or more", cfg.CeilingCalls, cfg.ReplayPayments)
	}
	for _, c := range cfg.Concurrencies {
		if c < 1 {
			return SweepReport{}, fmt.Errorf("concurrency %d: want at least 1", c)
		}
	}
	if cfg.Profile != nil && !slices.Contains(cfg.Concurrencies, cfg.ProfileConcurrency) {
		return SweepReport{}, fmt.Errorf("profile concurrency %d: not among the concurrencies %v", cfg.ProfileConcurrency, cfg.Concurrencies)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	var order []int
	for range max(cfg.Repeat, 1) {
		order = append(order, cfg.Concurrencies...)
	}
	b := &sweepBench{cfg: cfg, run: runID()}
	rep := SweepReport{Payments: cfg.Payments}
	up, err := local.Start(ctx, b.env(order[0], 0), time.Hour, cfg.Logger, cfg.Progress)
	if err != nil {
		return rep, err
	}
	defer up.Stop()
	b.aws = up.AWS
	b.counted, b.calls = Counted(up.AWS)
	profiled := false
	for i, concurrency := range order {
		profile := cfg.Profile != nil && concurrency == cfg.ProfileConcurrency && !profiled
		profiled = profiled || profile
		r, err := b.once(ctx, i, concurrency, profile, i == len(order)-1)
		rep.Runs = append(rep.Runs, r)
		if err != nil {
			return rep, fmt.Errorf("concurrency %d: %w", concurrency, err)
		}
	}
	if cfg.CeilingCalls > 0 {
		levels := []int{1}
		for _, c := range cfg.Concurrencies {
			if !slices.Contains(levels, c) {
				levels = append(levels, c)
			}
		}
		fmt.Fprintf(cfg.Progress, "measuring the emulator's ceiling: %d GetItem calls at concurrency %v...\n", cfg.CeilingCalls, levels)
		table := b.env(order[len(order)-1], len(order)-1)(wiring.EnvEventsTable)
		for _, c := range levels {
			ceil, err := getItemCeiling(ctx, up.AWS, table, cfg.CeilingCalls, c)
			if err != nil {
				return rep, err
			}
			rep.Ceilings = append(rep.Ceilings, ceil)
		}
	}
	return rep, nil
}

// sweepBench is one Sweep's state across its runs.
type sweepBench struct {
	cfg     SweepConfig
	run     string
	aws     aws.Config // to the emulator, uncounted
	counted aws.Config // the same, through calls
	calls   *Calls
}

// env is the environment of the i-th run: its own tables.
func (b *sweepBench) env(concurrency, i int) wiring.Getenv {
	suffix := b.run + "-" + strconv.Itoa(i)
	return Env(map[string]string{
		wiring.EnvPaymentTimeout:   b.cfg.Timeout.String(),
		wiring.EnvSweepConcurrency: strconv.Itoa(concurrency),
		wiring.EnvEventsTable:      "deadlinebench-sweep-events-" + suffix,
		wiring.EnvDeadlinesTable:   "deadlinebench-sweep-pending-" + suffix,
		wiring.EnvWebhookSecret:    local.DefaultWebhookSecret,
		wiring.EnvMetricsService:   "deadlinebench",
	}, b.cfg.Getenv, nil)
}

// once seeds the i-th run's tables, sweeps them, replays the sweep's calls, and
// deletes the tables unless keep is set.
func (b *sweepBench) once(ctx context.Context, i, concurrency int, profile, keep bool) (SweepRun, error) {
	cfg, progress := b.cfg, b.cfg.Progress
	getenv := b.env(concurrency, i)
	events, pending := getenv(wiring.EnvEventsTable), getenv(wiring.EnvDeadlinesTable)
	if err := local.CreateTables(ctx, b.aws, events, pending); err != nil {
		return SweepRun{Concurrency: concurrency}, err
	}
	fmt.Fprintf(progress, "concurrency %d: seeding %d due payments into %s...\n", concurrency, cfg.Payments, events)
	preparedAt := time.Now().Add(-cfg.Timeout - time.Minute).Truncate(time.Millisecond)
	started := time.Now()
	rentals, err := seed(ctx, b.aws, getenv, cfg.Logger, b.run+strconv.Itoa(i), cfg.Payments, preparedAt)
	r := SweepRun{Concurrency: concurrency, Seed: time.Since(started)}
	if err != nil {
		return r, err
	}
	sweeper, err := sweepfn.New(b.counted, getenv, cfg.Logger, nil)
	if err != nil {
		return r, err
	}
	how := ""
	if profile {
		how = ", CPU-profiled"
	}
	fmt.Fprintf(progress, "concurrency %d: seeded in %s; sweeping%s...\n", concurrency, r.Seed.Round(time.Millisecond), how)

	sweepCtx, cancel := context.WithTimeout(ctx, cfg.Budget)
	defer cancel()
	b.calls.Reset()
	own0, ok1 := ownCPU()
	emu0, ok2 := childrenCPU()
	if profile {
		if err := pprof.StartCPUProfile(cfg.Profile); err != nil {
			return r, fmt.Errorf("start the CPU profile: %w", err)
		}
	}
	started = time.Now()
	r.Summary, err = sweeper.Run(sweepCtx, preparedAt.Add(cfg.Timeout+time.Millisecond))
	r.Wall = time.Since(started)
	if profile {
		pprof.StopCPUProfile()
	}
	own1, ok3 := ownCPU()
	emu1, ok4 := childrenCPU()
	r.Calls, r.TotalCalls, r.InFlight = b.calls.Snapshot()
	if r.CPUMeasured = ok1 && ok2 && ok3 && ok4; r.CPUMeasured {
		r.OwnCPU, r.EmulatorCPU = own1-own0, emu1-emu0
	}
	if err != nil {
		return r, fmt.Errorf("sweep: %w", err)
	}
	if pay, _ := r.Summary.Kind(deadlinekinds.Payment); pay.Found != cfg.Payments || pay.Acted != cfg.Payments {
		return r, fmt.Errorf("the sweep found %d and cancelled %d (failed %d, incomplete %t) of %d due payments",
			pay.Found, pay.Acted, pay.Failed, r.Summary.Incomplete, cfg.Payments)
	}
	fmt.Fprintf(progress, "concurrency %d: swept in %s\n", concurrency, r.Wall.Round(time.Millisecond))

	if n := min(cfg.ReplayPayments, len(rentals)); n > 0 {
		fmt.Fprintf(progress, "concurrency %d: replaying the sweep's calls for %d of its payments...\n", concurrency, n)
		replay, err := sweepCallsCeiling(ctx, b.aws, events, b.run, rentals[:n], concurrency)
		if err != nil {
			return r, err
		}
		r.Replay = &replay
	}
	if !keep {
		// The emulator keeps every item in one Python process; dropping what is done
		// with keeps the next run's emulator as lean as this one's was.
		db := dynamodb.NewFromConfig(b.aws)
		for _, table := range []string{events, pending} {
			if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(table)}); err != nil {
				return r, fmt.Errorf("delete %s: %w", table, err)
			}
		}
	}
	return r, nil
}

// recording is an in-memory event store that remembers every record appended
// through it, by Append or by AppendStreams (a bike request appends to the bike's and
// the renter's streams together). It reads backwards as the memory store does, which
// the renter's limit needs.
type recording struct {
	*eventstore.Memory
	mu      sync.Mutex
	records []eventstore.Record
}

var (
	_ eventstore.MultiStreamStore = (*recording)(nil)
	_ eventstore.BackwardReader   = (*recording)(nil)
)

func (r *recording) Append(ctx context.Context, streamID string, expected int64, events ...eventstore.Event) ([]eventstore.Record, error) {
	return r.remember(r.Memory.Append(ctx, streamID, expected, events...))
}

func (r *recording) AppendStreams(ctx context.Context, appends ...eventstore.StreamAppend) ([]eventstore.Record, error) {
	return r.remember(r.Memory.AppendStreams(ctx, appends...))
}

func (r *recording) remember(recs []eventstore.Record, err error) ([]eventstore.Record, error) {
	if err == nil {
		r.mu.Lock()
		r.records = append(r.records, recs...)
		r.mu.Unlock()
	}
	return recs, err
}

// seed makes n rentals whose payments are outstanding, every event recorded at
// preparedAt: each bike is registered and requested, by a renter of its own, through
// the command handler (the request appends to the renter's stream too), and
// the rental-payment process reacts to the request (preparing the payment and
// recording that it asked for it), all in memory; then every record is written to the
// Events table as the event store writes it (in batches, as the store never does,
// because only the result matters here), and each PaymentPrepared is applied to the
// Deadlines table by the projector's code. The sweep then finds exactly what
// the live service would have left: full histories and one index row per payment.
func seed(ctx context.Context, cfg aws.Config, getenv wiring.Getenv, logger *slog.Logger, run string, n int, preparedAt time.Time) (rentalIDs []string, err error) {
	rec := &recording{Memory: eventstore.NewMemoryWithClock(func() time.Time { return preparedAt })}
	commands := command.New(rec, command.WithProvider(generic.Provider{}))
	process, err := wiring.Process(rec, commands, getenv, logger)
	if err != nil {
		return nil, err
	}
	rentalIDs = make([]string, n)
	for i := range n {
		bike := fmt.Sprintf("dls-%s-%d", run, i)
		rentalID := rental.NewRentalID(bike, ident.Random(rental.RentalSuffixLength))
		rentalIDs[i] = rentalID
		meta := command.Meta{CorrelationID: rentalID, CausationID: "deadlinebench-seed"}
		if _, err := commands.Bike(ctx, rental.RegisterBike{BikeID: bike}, meta); err != nil {
			return nil, fmt.Errorf("seed: register %s: %w", bike, err)
		}
		res, err := commands.Bike(ctx, rental.RequestBike{BikeID: bike, Renter: "renter-" + bike, RentalID: rentalID}, meta)
		if err != nil {
			return nil, fmt.Errorf("seed: request %s: %w", bike, err)
		}
		for _, r := range res.Appended {
			if err := process.Handle(ctx, r); err != nil {
				return nil, fmt.Errorf("seed: process %s: %w", rentalID, err)
			}
		}
	}

	db := dynamodb.NewFromConfig(cfg)
	table := getenv(wiring.EnvEventsTable)
	for batch := range chunks(rec.records, 25) {
		writes := make([]types.WriteRequest, len(batch))
		for i, r := range batch {
			writes[i] = types.WriteRequest{PutRequest: &types.PutRequest{Item: dynamo.EncodeRecord(r)}}
		}
		for attempt := 0; len(writes) > 0; attempt++ {
			if attempt > 0 {
				if err := sleep(ctx, time.Duration(attempt)*50*time.Millisecond); err != nil {
					return nil, err
				}
			}
			out, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{table: writes}})
			if err != nil {
				return nil, fmt.Errorf("seed: write events: %w", err)
			}
			writes = out.UnprocessedItems[table]
		}
	}

	projection, err := wiring.DeadlineProjection(cfg, getenv)
	if err != nil {
		return nil, err
	}
	if projection == nil {
		return nil, fmt.Errorf("seed: %s is not set", wiring.EnvDeadlinesTable)
	}
	var prepared []eventstore.Record
	for _, r := range rec.records {
		if r.Type == (payment.PaymentPrepared{}).EventType() {
			prepared = append(prepared, r)
		}
	}
	if len(prepared) != n {
		return nil, fmt.Errorf("seed: %d payments prepared, want %d", len(prepared), n)
	}
	err = parallel(ctx, len(prepared), 8, func(ctx context.Context, i int) error {
		return projection.Apply(ctx, dynamo.RecordOf(prepared[i]))
	})
	if err != nil {
		return nil, fmt.Errorf("seed: project: %w", err)
	}
	return rentalIDs, nil
}

// chunks yields s in consecutive pieces of at most size.
func chunks[T any](s []T, size int) func(func([]T) bool) {
	return func(yield func([]T) bool) {
		for len(s) > 0 {
			k := min(size, len(s))
			if !yield(s[:k]) {
				return
			}
			s = s[k:]
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// parallel calls fn for 0 … n-1, at most concurrency at once, and returns the first
// error (after which it starts nothing more).
func parallel(ctx context.Context, n, concurrency int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					cancel(err)
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return ctx.Err()
}

// getItemCeiling times calls strongly consistent GetItem calls of one small item of
// the Events table, concurrency at once: the cheapest request the emulator serves.
func getItemCeiling(ctx context.Context, cfg aws.Config, table string, calls, concurrency int) (Ceiling, error) {
	db := dynamodb.NewFromConfig(cfg)
	key := map[string]types.AttributeValue{
		schema.EventsStreamID: &types.AttributeValueMemberS{Value: "deadlinebench-ceiling"},
		schema.EventsVersion:  &types.AttributeValueMemberN{Value: "1"},
	}
	started := time.Now()
	err := parallel(ctx, calls, concurrency, func(ctx context.Context, _ int) error {
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: key, ConsistentRead: aws.Bool(true)})
		return err
	})
	if err != nil {
		return Ceiling{}, fmt.Errorf("ceiling: GetItem: %w", err)
	}
	return Ceiling{What: "GetItem", Concurrency: concurrency, Calls: calls, Wall: time.Since(started)}, nil
}

// sweepCallsCeiling replays, with raw SDK calls and none of our code around them, the
// DynamoDB calls a sweep makes to cancel each of the rentals' payments: read the
// process's stream, read the payment's stream twice (strongly consistent queries, as
// the event store reads: the cancellation loads the payment once to decide whether
// to call the provider, and again to decide and append), and put one event
// conditionally (to a scratch stream, so that the swept histories stay as they
// are), concurrency rentals at once.
func sweepCallsCeiling(ctx context.Context, cfg aws.Config, table, run string, rentals []string, concurrency int) (Ceiling, error) {
	db := dynamodb.NewFromConfig(cfg)
	query := func(ctx context.Context, streamID string) error {
		_, err := db.Query(ctx, &dynamodb.QueryInput{
			TableName:                aws.String(table),
			ConsistentRead:           aws.Bool(true),
			KeyConditionExpression:   aws.String("#s = :s AND #v >= :v"),
			ExpressionAttributeNames: map[string]string{"#s": schema.EventsStreamID, "#v": schema.EventsVersion},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":s": &types.AttributeValueMemberS{Value: streamID},
				":v": &types.AttributeValueMemberN{Value: "1"},
			},
		})
		return err
	}
	scratch := fmt.Sprintf("deadlinebench-ceiling-%s-c%d-", run, concurrency)
	started := time.Now()
	err := parallel(ctx, len(rentals), concurrency, func(ctx context.Context, i int) error {
		if err := query(ctx, rentalpayment.StreamID(rentals[i])); err != nil {
			return err
		}
		for range 2 {
			if err := query(ctx, payment.StreamID(payment.ReferenceFor(rentals[i]))); err != nil {
				return err
			}
		}
		r := eventstore.Record{StreamID: scratch + strconv.Itoa(i), Version: 1, Event: eventstore.Event{
			ID: ident.UUID(), Type: payment.PaymentCancelled{}.EventType(), RecordedAt: time.Now(),
			Data:          []byte(`{"reference":"` + payment.ReferenceFor(rentals[i]) + `"}`),
			Tags:          []string{"payment:" + payment.ReferenceFor(rentals[i]), "rental:" + rentals[i]},
			CorrelationID: rentals[i], CausationID: "deadlinebench-ceiling",
		}}
		_, err := db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(table), Item: dynamo.EncodeRecord(r),
			ConditionExpression:      aws.String("attribute_not_exists(#v)"),
			ExpressionAttributeNames: map[string]string{"#v": schema.EventsVersion},
		})
		return err
	})
	if err != nil {
		return Ceiling{}, fmt.Errorf("ceiling: replay the sweep's calls: %w", err)
	}
	return Ceiling{What: "sweep's calls (Query, Query, Query, PutItem per payment)", Concurrency: concurrency,
		Calls: 4 * len(rentals), Wall: time.Since(started)}, nil
}
