package process

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestNoRecordingWithoutARead checks the guard that makes an unguarded append
// impossible: a Snapshot that did not come from a read is refused, in both modes.
func TestNoRecordingWithoutARead(t *testing.T) {
	for _, mode := range []RecordingMode{RecordByAppend, RecordByCommand} {
		store := eventstore.NewMemory()
		p, err := New(Config{Store: store, Commands: command.New(store, command.WithProvider(generic.Provider{})), Mode: mode, Price: Price{Amount: 1, Currency: "EUR"}})
		if err != nil {
			t.Fatal(err)
		}
		cmd := rentalpayment.RecordPaymentRequested{RentalPaymentRequested: rentalpayment.RentalPaymentRequested{RentalID: "b1_AAAAAAAAAAAAAAAAAAAAAA"}}
		if err := p.recorder.record(context.Background(), "b1_AAAAAAAAAAAAAAAAAAAAAA", Snapshot{}, cmd, command.Meta{}); !errors.Is(err, errUnread) {
			t.Errorf("%s: recording from an unread snapshot: err = %v, want errUnread", mode, err)
		}
		if recs, _ := store.Read(context.Background(), rentalpayment.StreamID("b1_AAAAAAAAAAAAAAAAAAAAAA"), 0); len(recs) != 0 {
			t.Errorf("%s: %d events written", mode, len(recs))
		}
	}
}

// TestAppendModeIsGuardedByTheVersionRead shows the append mechanism's guard: a
// snapshot that went stale because another writer recorded meanwhile fails with a
// concurrency conflict instead of writing a second start.
func TestAppendModeIsGuardedByTheVersionRead(t *testing.T) {
	store := eventstore.NewMemory()
	p, _ := New(Config{Store: store, Commands: command.New(store, command.WithProvider(generic.Provider{})), Mode: RecordByAppend, Price: Price{Amount: 1, Currency: "EUR"}})
	ctx := context.Background()
	const rentalID = "b1_AAAAAAAAAAAAAAAAAAAAAA"
	stale, err := p.load(ctx, rentalID)
	if err != nil {
		t.Fatal(err)
	}
	cmd := rentalpayment.RecordPaymentRequested{RentalPaymentRequested: rentalpayment.RentalPaymentRequested{RentalID: rentalID, BikeID: "b1", Renter: "alice", Amount: 1, Currency: "EUR"}}
	if err := p.HandleRecording(ctx, rentalID, cmd, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if err := p.recorder.record(ctx, rentalID, stale, cmd, command.Meta{}); !errors.Is(err, eventstore.ErrConcurrency) {
		t.Fatalf("append from a stale snapshot: err = %v, want ErrConcurrency", err)
	}
	if recs, _ := store.Read(ctx, rentalpayment.StreamID(rentalID), 0); len(recs) != 1 {
		t.Fatalf("the process stream holds %d events, want 1", len(recs))
	}
}

// TestCommandModeRecordsWhatIsAlreadyRecordedOnce shows the command mechanism's guard,
// which is Decide's: a delivery whose snapshot went stale because another one recorded
// meanwhile records through HandleRecording, which decides again from the stream and
// appends nothing, for the start and for the end.
func TestCommandModeRecordsWhatIsAlreadyRecordedOnce(t *testing.T) {
	store := eventstore.NewMemory()
	p, _ := New(Config{Store: store, Commands: command.New(store, command.WithProvider(generic.Provider{})), Mode: RecordByCommand, Price: Price{Amount: 1, Currency: "EUR"}})
	ctx := context.Background()
	const rentalID = "b1_AAAAAAAAAAAAAAAAAAAAAA"
	start := rentalpayment.RecordPaymentRequested{RentalPaymentRequested: rentalpayment.RentalPaymentRequested{RentalID: rentalID, BikeID: "b1", Renter: "alice", Amount: 1, Currency: "EUR"}}
	end := rentalpayment.RecordProcessCompleted{RentalPaymentProcessCompleted: rentalpayment.RentalPaymentProcessCompleted{RentalID: rentalID, Outcome: rentalpayment.CompletedApproved}}
	for _, cmd := range []rentalpayment.Command{start, end} {
		stale, err := p.load(ctx, rentalID)
		if err != nil {
			t.Fatal(err)
		}
		if err := p.HandleRecording(ctx, rentalID, cmd, command.Meta{}); err != nil {
			t.Fatal(err)
		}
		if err := p.recorder.record(ctx, rentalID, stale, cmd, command.Meta{}); err != nil {
			t.Fatalf("%T from a stale snapshot: err = %v, want it to succeed and append nothing", cmd, err)
		}
	}
	recs, err := store.Read(ctx, rentalpayment.StreamID(rentalID), 0)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		got = append(got, r.Type)
	}
	if want := []string{rentalpayment.TypeRequested, rentalpayment.TypeCompleted}; !slices.Equal(got, want) {
		t.Errorf("the process stream holds %v, want %v", got, want)
	}
}
