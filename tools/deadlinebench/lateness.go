package deadlinebench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/auth"
	"github.com/bikerental/bikerental/internal/dev/local"
	"github.com/bikerental/bikerental/internal/dev/streampoll"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
)

// LatenessConfig configures a lateness run.
type LatenessConfig struct {
	// Rentals is how many rentals to make, none of them ever paid.
	Rentals int
	// Spread is the time over which their requests are spread evenly.
	Spread time.Duration
	// Timeout is the stack's PAYMENT_TIMEOUT.
	Timeout time.Duration
	// Interval is how often the local runner sweeps.
	Interval time.Duration
	// Mode is the stack's DEADLINE_MODE: wiring.ModeSweep or wiring.ModePrecise.
	Mode string
	// Wait bounds the wait, after the last request, for every payment to be
	// cancelled; zero means Timeout + 3×Interval + 60s.
	Wait time.Duration
	// Getenv is the environment passed on to the stack, under the settings above
	// (os.Getenv, usually); nil passes on nothing else.
	Getenv wiring.Getenv
	// Logger receives the stack's logs; nil discards them.
	Logger *slog.Logger
	// Progress receives one line per step; nil discards them.
	Progress io.Writer
}

// LatenessReport is what a lateness run measured: for each payment, how long after
// its deadline (PaymentPrepared's recorded time plus the timeout) its
// PaymentCancelled was recorded, both times read from the event store.
type LatenessReport struct {
	Mode     string
	Rentals  int
	Timeout  time.Duration
	Interval time.Duration
	Spread   time.Duration
	Lateness Distribution
	// Released is the same for the rental-payment process's completion, which
	// rejects the request and frees the bike: the end the renter sees.
	Released Distribution
}

// Lateness brings up a local stack (emulator, tables, the four functions in this
// process, the local runner's API, stream mappings and scheduler) with the
// configured timeout, interval and mode, requests cfg.Rentals bikes over its HTTP
// API spread over cfg.Spread, never pays, waits until every payment is cancelled and
// measures how late each cancellation was. It fails if any payment ends otherwise
// or is still outstanding when the wait runs out.
//
// The bikes are registered with an operator's token and each is requested by a
// renter of its own, with that renter's token, all from the stack's local token
// issuer and fetched before the requests start, so that minting them does not delay
// any request; with one outstanding request per renter, the stack's limit of
// outstanding requests per renter (MAX_PENDING_PER_RENTER) never refuses one.
func Lateness(ctx context.Context, cfg LatenessConfig) (LatenessReport, error) {
	mode, cfg, err := cfg.checked()
	if err != nil {
		return LatenessReport{}, err
	}
	progress := cfg.Progress
	quiet := new(atomic.Bool)
	logger := slog.New(gate{cfg.Logger.Handler(), quiet})
	run := runID()
	getenv := cfg.env(mode, run)
	rep := LatenessReport{Mode: mode, Rentals: cfg.Rentals, Timeout: cfg.Timeout, Interval: cfg.Interval, Spread: cfg.Spread}

	up, err := local.Start(ctx, getenv, cfg.Interval, logger, progress)
	if err != nil {
		return rep, err
	}
	defer up.Stop()
	listener, err := local.Listen("127.0.0.1:0")
	if err != nil {
		return rep, err
	}
	base := "http://" + listener.Addr().String()
	runCtx, stopStack := context.WithCancelCause(ctx)
	stackDone := make(chan error, 1)
	go func() { stackDone <- up.Run(runCtx, listener) }()
	defer func() {
		stopStack(nil)
		<-stackDone
	}()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-up.Died():
			cancel(fmt.Errorf("the emulator stopped: %s", up.Reason()))
		case err := <-stackDone:
			stackDone <- err // for the deferred stop
			cancel(fmt.Errorf("the local stack stopped: %v", err))
		case <-runCtx.Done():
		}
	}()

	w, err := newWatcher(ctx, up.AWS, up.EventsTable, logger)
	if err != nil {
		return rep, err
	}
	watchCtx, cancelWatch := context.WithCancel(ctx)
	watching := make(chan struct{})
	go func() { defer close(watching); w.run(watchCtx, time.Second) }()
	stopWatching := func() { cancelWatch(); <-watching }
	defer stopWatching()

	fmt.Fprintf(progress, "API: %s; mode %s, payment timeout %s, sweep interval %s\n", base, mode, cfg.Timeout, cfg.Interval)
	refs, err := rentAll(ctx, base, run, cfg)
	if err != nil {
		return rep, withCause(ctx, err)
	}
	fmt.Fprintf(progress, "%d rentals requested; waiting up to %s for every payment to be cancelled...\n", len(refs), cfg.Wait)
	waitCtx, cancelWait := context.WithTimeout(ctx, cfg.Wait)
	defer cancelWait()
	if err := w.waitCancelled(waitCtx, refs); err != nil {
		return rep, withCause(ctx, err)
	}
	stopWatching()
	// Every process has completed, so stopping the stack interrupts little; what it
	// does interrupt is of no interest.
	quiet.Store(true)

	late, released, err := lateness(ctx, dynamo.New(dynamodb.NewFromConfig(up.AWS), up.EventsTable), refs, cfg.Timeout)
	if err != nil {
		return rep, withCause(ctx, err)
	}
	if rep.Lateness, err = Summarize(late); err != nil {
		return rep, err
	}
	rep.Released, err = Summarize(released)
	return rep, err
}

// checked returns cfg's deadline mode and cfg with its defaults (Wait, Logger,
// Progress), or why cfg cannot run.
func (cfg LatenessConfig) checked() (string, LatenessConfig, error) {
	mode, err := wiring.DeadlineMode(func(name string) string {
		if name == wiring.EnvDeadlineMode {
			return cfg.Mode
		}
		return ""
	})
	switch {
	case err != nil:
		return "", cfg, err
	case cfg.Rentals < 1:
		return "", cfg, fmt.Errorf("rentals %d: want at least 1", cfg.Rentals)
	case cfg.Spread < 0:
		return "", cfg, fmt.Errorf("spread %s: want zero or more", cfg.Spread)
	case cfg.Timeout <= 0 || cfg.Interval <= 0:
		return "", cfg, fmt.Errorf("timeout %s and interval %s: want positive durations", cfg.Timeout, cfg.Interval)
	}
	if cfg.Wait <= 0 {
		cfg.Wait = cfg.Timeout + 3*cfg.Interval + time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Progress == nil {
		cfg.Progress = io.Discard
	}
	return mode, cfg, nil
}

// env is the local stack's settings for run: the configured timeout and mode
// over cfg.Getenv, tables of the run's own, and the local webhook secret unless
// cfg.Getenv sets them.
func (cfg LatenessConfig) env(mode, run string) wiring.Getenv {
	return Env(map[string]string{
		wiring.EnvPaymentTimeout: cfg.Timeout.String(),
		wiring.EnvDeadlineMode:   mode,
	}, cfg.Getenv, map[string]string{
		wiring.EnvEventsTable:    "deadlinebench-events-" + run,
		wiring.EnvDeadlinesTable: "deadlinebench-pending-" + run,
		wiring.EnvWebhookSecret:  local.DefaultWebhookSecret,
	})
}

// rentAll registers cfg.Rentals bikes of run through the API at base, with an
// operator's token, fetches a token for each bike's renter, and then requests
// every bike over cfg.Spread (requestAll). It returns the payment references.
func rentAll(ctx context.Context, base, run string, cfg LatenessConfig) ([]string, error) {
	client := &http.Client{Timeout: 30 * time.Second}
	tokens := &auth.Tokens{BaseURL: base, Client: client}
	operator, err := tokens.Operator(ctx, "dlb-"+run+"-ops")
	if err != nil {
		return nil, err
	}
	bikes := make([]string, cfg.Rentals)
	renters := make([]string, cfg.Rentals) // each bike's renter's token
	for i := range bikes {
		bikes[i] = fmt.Sprintf("dlb-%s-%d", run, i)
		if err := call(ctx, client, operator, http.MethodPut, base+"/bikes/"+bikes[i], nil, http.StatusCreated, nil); err != nil {
			return nil, err
		}
		if renters[i], err = tokens.Renter(ctx, "renter-"+bikes[i]); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(cfg.Progress, "registered %d bikes; requesting them over %s...\n", len(bikes), cfg.Spread)
	return requestAll(ctx, client, base, bikes, renters, cfg.Spread)
}

// lateness reads from store, for each payment of refs, how long after its
// deadline (PaymentPrepared's recorded time plus timeout) it was cancelled and its
// rental's process completed.
func lateness(ctx context.Context, store eventstore.Store, refs []string, timeout time.Duration) (late, released []time.Duration, err error) {
	prepared, cancelled := payment.PaymentPrepared{}.EventType(), payment.PaymentCancelled{}.EventType()
	late = make([]time.Duration, 0, len(refs))
	released = make([]time.Duration, 0, len(refs))
	for _, ref := range refs {
		at, err := recordedAt(ctx, store, payment.StreamID(ref), prepared, cancelled)
		if err != nil {
			return nil, nil, err
		}
		due := at[prepared].Add(timeout)
		late = append(late, at[cancelled].Sub(due))
		rentalID, _ := payment.RentalIDFor(ref)
		done, err := recordedAt(ctx, store, rentalpayment.StreamID(rentalID), rentalpayment.TypeCompleted)
		if err != nil {
			return nil, nil, err
		}
		released = append(released, done[rentalpayment.TypeCompleted].Sub(due))
	}
	return late, released, nil
}

// recordedAt reads a stream from the event store and returns the recorded time of
// the first event of each of the types, all of which must be there.
func recordedAt(ctx context.Context, store eventstore.Store, streamID string, types ...string) (map[string]time.Time, error) {
	records, err := store.Read(ctx, streamID, 0)
	if err != nil {
		return nil, err
	}
	at := map[string]time.Time{}
	for _, r := range records {
		if _, seen := at[r.Type]; !seen && slices.Contains(types, r.Type) {
			at[r.Type] = r.RecordedAt
		}
	}
	for _, t := range types {
		if _, ok := at[t]; !ok {
			return nil, fmt.Errorf("stream %s holds no %s", streamID, t)
		}
	}
	return at, nil
}

// withCause prefers why ctx ended (the emulator or the stack stopped) to the error
// that ending caused.
func withCause(ctx context.Context, err error) error {
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) && !errors.Is(cause, context.DeadlineExceeded) {
		return cause
	}
	return err
}

// requestAll requests each bike as its renter, whose token is the same index of
// renters, the i-th request starting at i/len(bikes) of spread, and returns the
// payment references, in the order of bikes.
func requestAll(ctx context.Context, client *http.Client, base string, bikes, renters []string, spread time.Duration) ([]string, error) {
	refs := make([]string, len(bikes))
	errs := make([]error, len(bikes))
	start := time.Now()
	var wg sync.WaitGroup
	for i, bike := range bikes {
		at := start.Add(time.Duration(int64(spread) * int64(i) / int64(len(bikes))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case <-time.After(time.Until(at)):
			case <-ctx.Done():
				errs[i] = ctx.Err()
				return
			}
			body, _ := json.Marshal(map[string]string{"bikeId": bike}) // the renter is the token's subject
			var accepted struct {
				PaymentReference string `json:"paymentReference"`
			}
			if errs[i] = call(ctx, client, renters[i], http.MethodPost, base+"/rentals", body, http.StatusAccepted, &accepted); errs[i] == nil {
				refs[i] = accepted.PaymentReference
				if refs[i] == "" {
					errs[i] = fmt.Errorf("POST /rentals for %s: no paymentReference in the answer", bike)
				}
			}
		}()
	}
	wg.Wait()
	return refs, errors.Join(errs...)
}

// call sends one request with the bearer token and decodes the answer into out (if
// not nil), expecting the status want.
func call(ctx context.Context, client *http.Client, token, method, url string, body []byte, want int, out any) error {
	req, err := http.NewRequestWithContext(ctx, method, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", auth.Bearer(token))
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, url, err)
	}
	if resp.StatusCode != want {
		return fmt.Errorf("%s %s: got %d, want %d: %s", method, url, resp.StatusCode, want, strings.TrimSpace(string(b)))
	}
	if out != nil {
		if err := json.Unmarshal(b, out); err != nil {
			return fmt.Errorf("%s %s: answer: %w", method, url, err)
		}
	}
	return nil
}

// watcher follows the Events table's stream, as a third consumer beside the
// process and the projector, to learn when payments settle without querying their
// streams over and over (which would load the single-threaded emulator while it is
// being measured): one pass costs a handful of Streams calls however many payments
// are outstanding.
type watcher struct {
	poller *streampoll.Poller
	mu     sync.Mutex
	// settled maps each payment stream that settled to the type of its settling
	// event; completed holds the process streams that recorded their completion.
	settled   map[string]string
	completed map[string]bool
	changed   chan struct{} // receives after every pass that saw something
}

func newWatcher(ctx context.Context, cfg aws.Config, eventsTable string, logger *slog.Logger) (*watcher, error) {
	desc, err := dynamodb.NewFromConfig(cfg).DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(eventsTable)})
	if err != nil {
		return nil, fmt.Errorf("describe %s: %w", eventsTable, err)
	}
	w := &watcher{settled: map[string]string{}, completed: map[string]bool{}, changed: make(chan struct{}, 1)}
	w.poller = &streampoll.Poller{
		Client: dynamodbstreams.NewFromConfig(cfg), StreamARN: aws.ToString(desc.Table.LatestStreamArn),
		BatchSize: streampoll.MaxBatchSize, Logger: logger,
		Handler: func(_ context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			for _, rec := range ev.Records {
				r, err := dynamo.DecodeImage(rec.Change.NewImage)
				if err != nil {
					continue // not an event of a payment this run made
				}
				switch {
				case payment.Settles(r.Type):
					if _, seen := w.settled[r.StreamID]; !seen {
						w.settled[r.StreamID] = r.Type
					}
				case rentalpayment.Ends(r.Type):
					w.completed[r.StreamID] = true
				}
			}
			return events.DynamoDBEventResponse{}, nil
		},
	}
	return w, nil
}

// run polls the stream every interval until ctx ends.
func (w *watcher) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		if n, _ := w.poller.Poll(ctx); n > 0 {
			select {
			case w.changed <- struct{}{}:
			default:
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// waitCancelled waits until every payment of refs has settled and its process has
// completed, and fails if one settled otherwise than by cancellation, or if ctx ends
// first.
func (w *watcher) waitCancelled(ctx context.Context, refs []string) error {
	for {
		w.mu.Lock()
		var outstanding, wrong []string
		for _, ref := range refs {
			rentalID, _ := payment.RentalIDFor(ref)
			how, settled := w.settled[payment.StreamID(ref)]
			switch {
			case settled && how != payment.PaymentCancelled{}.EventType():
				wrong = append(wrong, ref+" ("+how+")")
			case !settled || !w.completed[rentalpayment.StreamID(rentalID)]:
				outstanding = append(outstanding, ref)
			}
		}
		w.mu.Unlock()
		if len(wrong) > 0 {
			return fmt.Errorf("%d payments settled otherwise than by cancellation: %s", len(wrong), strings.Join(wrong, ", "))
		}
		if len(outstanding) == 0 {
			return nil
		}
		select {
		case <-w.changed:
		case <-ctx.Done():
			n := len(outstanding)
			sort.Strings(outstanding)
			if n > 5 {
				outstanding = append(outstanding[:5], "…")
			}
			return fmt.Errorf("%d of %d payments still not cancelled, or their process not completed, when the wait ended (%w): %s",
				n, len(refs), ctx.Err(), strings.Join(outstanding, ", "))
		}
	}
}

// gate passes log records on until closed is set, and drops them after.
type gate struct {
	slog.Handler
	closed *atomic.Bool
}

func (g gate) Enabled(ctx context.Context, l slog.Level) bool {
	return !g.closed.Load() && g.Handler.Enabled(ctx, l)
}

func (g gate) Handle(ctx context.Context, r slog.Record) error {
	if g.closed.Load() {
		return nil
	}
	return g.Handler.Handle(ctx, r)
}

func (g gate) WithAttrs(attrs []slog.Attr) slog.Handler {
	return gate{g.Handler.WithAttrs(attrs), g.closed}
}

func (g gate) WithGroup(name string) slog.Handler { return gate{g.Handler.WithGroup(name), g.closed} }
