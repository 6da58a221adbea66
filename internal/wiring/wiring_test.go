package wiring_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/wiring"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

func env(vars map[string]string) wiring.Getenv { return func(k string) string { return vars[k] } }

func TestEventStoreNeedsItsTable(t *testing.T) {
	if _, err := wiring.EventStore(aws.Config{}, env(nil)); !errors.Is(err, wiring.ErrMissingSetting) {
		t.Errorf("err = %v, want ErrMissingSetting", err)
	}
}

func TestProcessSettings(t *testing.T) {
	store := eventstore.NewMemory()
	for _, tc := range []struct {
		name string
		vars map[string]string
		ok   bool
	}{
		{"defaults", nil, true},
		{"command mode", map[string]string{wiring.EnvRecordingMode: "command"}, true},
		{"unknown mode", map[string]string{wiring.EnvRecordingMode: "carrier-pigeon"}, false},
		{"price", map[string]string{wiring.EnvRentalPrice: "990", wiring.EnvRentalCurrency: "CHF"}, true},
		{"price not a number", map[string]string{wiring.EnvRentalPrice: "9.90"}, false},
		{"negative price", map[string]string{wiring.EnvRentalPrice: "-1"}, false},
		{"bad currency", map[string]string{wiring.EnvRentalCurrency: "euro"}, false},
		{"lower-case currency", map[string]string{wiring.EnvRentalCurrency: "chf"}, true},
		{"currency of digits", map[string]string{wiring.EnvRentalCurrency: "978"}, false},
		{"price over the payment's limit", map[string]string{wiring.EnvRentalPrice: "100000000"}, false},
	} {
		_, err := wiring.Process(store, command.New(store), env(tc.vars), nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: err = %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}

// TestRentalPriceTakesTheCurrencyInAnyCase: RENTAL_CURRENCY=eur is EUR, the form
// the payment takes, and the price is held to the payment's own limits.
func TestRentalPriceTakesTheCurrencyInAnyCase(t *testing.T) {
	for _, tc := range []struct {
		vars map[string]string
		want process.Price
	}{
		{nil, wiring.DefaultPrice},
		{map[string]string{wiring.EnvRentalCurrency: "eur"}, process.Price{Amount: 1500, Currency: "EUR"}},
		{map[string]string{wiring.EnvRentalCurrency: "Chf", wiring.EnvRentalPrice: "990"}, process.Price{Amount: 990, Currency: "CHF"}},
		{map[string]string{wiring.EnvRentalPrice: strconv.Itoa(payment.MaxAmount)}, process.Price{Amount: payment.MaxAmount, Currency: "EUR"}},
	} {
		got, err := wiring.RentalPrice(env(tc.vars))
		if err != nil || got != tc.want {
			t.Errorf("RentalPrice(%v) = %v, %v; want %v", tc.vars, got, err, tc.want)
		}
		if err := payment.CheckAmount(got.Amount); err != nil {
			t.Errorf("RentalPrice(%v): %v", tc.vars, err)
		}
		if err := payment.CheckCurrency(got.Currency); err != nil {
			t.Errorf("RentalPrice(%v): %v", tc.vars, err)
		}
	}
}

// TestALowerCaseCurrencyPreparesPayments: a process built with RENTAL_CURRENCY=eur
// prepares the payment of a requested bike in EUR (the currency as given would be
// refused by the payment, on every request).
func TestALowerCaseCurrencyPreparesPayments(t *testing.T) {
	store := eventstore.NewMemory()
	commands := command.New(store, command.WithProvider(generic.Provider{}))
	process, err := wiring.Process(store, commands, env(map[string]string{wiring.EnvRentalCurrency: "eur"}), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := commands.Bike(ctx, rental.RegisterBike{BikeID: "b1"}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	id := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")
	res, err := commands.Bike(ctx, rental.RequestBike{BikeID: "b1", Renter: "alice", RentalID: id}, command.Meta{})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res.Appended {
		if err := process.Handle(ctx, r); err != nil {
			t.Fatalf("the process refused %s: %v", r.Type, err)
		}
	}
	p, _, err := commands.LoadPayment(ctx, payment.ReferenceFor(id))
	if err != nil || p.Currency != "EUR" || p.Amount != wiring.DefaultPrice.Amount {
		t.Errorf("payment %+v, %v; want %d EUR", p, err, wiring.DefaultPrice.Amount)
	}
}

// TestSweepIntervalReadsTheTemplatesRate: SWEEP_RATE takes the rates the template's
// SweepRate allows, as the interval the sweep's backoff counts by.
func TestSweepIntervalReadsTheTemplatesRate(t *testing.T) {
	for v, want := range map[string]time.Duration{
		"": time.Minute, "rate(1 minute)": time.Minute, "rate(5 minutes)": 5 * time.Minute, "rate(1 hour)": time.Hour, "rate(2 hours)": 2 * time.Hour,
		"rate(5 seconds)": 5 * time.Second, wiring.RateExpression(1500 * time.Millisecond): 2 * time.Second, wiring.RateExpression(20 * time.Millisecond): time.Second,
		wiring.RateExpression(24 * time.Hour): 24 * time.Hour, wiring.RateExpression(90 * time.Second): 90 * time.Second,
	} {
		got, err := wiring.SweepInterval(env(map[string]string{wiring.EnvSweepRate: v}))
		if err != nil || got != want {
			t.Errorf("SWEEP_RATE=%q: %v, %v; want %v", v, got, err, want)
		}
	}
	for _, v := range []string{"rate(1 day)", "rate(0 seconds)", "rate(-1 minutes)", "rate(1minute)", "1m", "rate( 1 minute)", "rate(1 minute) "} {
		if got, err := wiring.SweepInterval(env(map[string]string{wiring.EnvSweepRate: v})); !errors.Is(err, wiring.ErrBadSetting) {
			t.Errorf("SWEEP_RATE=%q: %v, %v; want refused", v, got, err)
		}
	}
}
