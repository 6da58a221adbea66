package streambatch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ports/lambda/streambatch"
)

// hangsOn is a provider that never answers for one payment reference and answers
// at once for every other, as the generic provider does.
type hangsOn struct {
	generic.Provider
	reference string
}

func (p hangsOn) CreatePayment(ctx context.Context, reference string, amount int64, currency string) (payment.Created, error) {
	if reference == p.reference {
		<-ctx.Done()
		return payment.Created{}, ctx.Err()
	}
	return p.Provider.CreatePayment(ctx, reference, amount, currency)
}

// TestAProviderThatNeverAnswersFailsOnlyItsRecord runs a batch of three rentals
// through the process, whose provider never answers for the second: the provider
// call is abandoned after its bound and that record alone fails; the other rentals'
// processes start, and the batch is answered before the invocation's deadline.
func TestAProviderThatNeverAnswersFailsOnlyItsRecord(t *testing.T) {
	batch := bikeRequestedBatch(t, 3)
	rentals := make([]string, 3)
	for i, rec := range batch.Records {
		r, err := dynamo.DecodeImage(rec.Change.NewImage)
		if err != nil {
			t.Fatal(err)
		}
		rentals[i] = rentalOf(t, r)
	}
	store := eventstore.NewMemory()
	provider := hangsOn{reference: payment.ReferenceFor(rentals[1])}
	var logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	p, err := process.New(process.Config{Store: store, Commands: command.New(store, command.WithProvider(provider), command.WithProviderTimeout(50*time.Millisecond)),
		Price: process.Price{Amount: 1500, Currency: "EUR"}, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	// The invocation's deadline is far enough that HandleBatch's own margin would
	// end the call only seconds later, with another error than the provider's bound.
	ctx, cancel := context.WithTimeout(context.Background(), streambatch.DeadlineMargin+3*time.Second)
	defer cancel()

	resp := streambatch.HandleBatch(ctx, batch, p.Handle, streambatch.Options{Concurrency: 3, Logger: logger})

	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != batch.Records[1].Change.SequenceNumber {
		t.Errorf("failures %v, want exactly the second record's", resp.BatchItemFailures)
	}
	for i, id := range rentals {
		records, err := store.Read(context.Background(), rentalpayment.StreamID(id), 0)
		if err != nil {
			t.Fatal(err)
		}
		if started := len(records) > 0; started != (i != 1) {
			t.Errorf("rental %d: process started %v", i, started)
		}
	}
	if !strings.Contains(logs.String(), command.ErrProviderTimeout.Error()) {
		t.Errorf("the failure is not the provider's timeout:\n%s", logs.String())
	}
}

func rentalOf(t *testing.T, r eventstore.Record) string {
	t.Helper()
	var e rental.BikeRequested
	if err := json.Unmarshal(r.Data, &e); err != nil {
		t.Fatal(err)
	}
	return e.RentalID
}
