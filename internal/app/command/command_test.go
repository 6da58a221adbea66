package command_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/adapters/provider/generic"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/renter"
	"github.com/bikerental/bikerental/internal/eventstore"
)

var ctx = context.Background()

func TestEventsCarryTagsCorrelationAndCausation(t *testing.T) {
	store := eventstore.NewMemory()
	n := 0
	h := command.New(store, command.WithProvider(generic.Provider{}), command.WithEventIDs(func() string { n++; return fmt.Sprintf("evt-%d", n) }))
	if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: "b1"}, command.Meta{CausationID: "request:1"}); err != nil {
		t.Fatal(err)
	}
	rentalID := rental.NewRentalID("b1", "AAAAAAAAAAAAAAAAAAAAAA")
	res, err := h.Bike(ctx, rental.RequestBike{BikeID: "b1", Renter: "alice", RentalID: rentalID}, command.Meta{CausationID: "request:2"})
	if err != nil {
		t.Fatal(err)
	}
	if res.State.Status != rental.StatusRequested || len(res.Appended) != 2 {
		t.Fatalf("result = %+v", res)
	}
	r := res.Appended[0]
	if who := res.Appended[1]; who.StreamID != renter.StreamID("alice") || who.Type != "RentalRequested" || who.Version != 1 ||
		who.CorrelationID != rentalID || who.CausationID != "request:2" || !slices.Equal(who.Tags, []string{"renter:alice", "rental:" + rentalID}) {
		t.Errorf("renter record = %+v", who)
	}
	if r.ID != "evt-2" || r.Type != "BikeRequested" || r.Version != 2 || r.CausationID != "request:2" ||
		r.CorrelationID != rentalID || !slices.Equal(r.Tags, []string{"bike:b1", "rental:" + rentalID}) {
		t.Errorf("record = %+v", r)
	}
	var data rental.BikeRequested
	if err := json.Unmarshal(r.Data, &data); err != nil || data.RentalID != rentalID || data.Renter != "alice" {
		t.Errorf("data = %s (%v)", r.Data, err)
	}

	ref := payment.ReferenceFor(rentalID)
	pay, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "p1", Amount: 100, Currency: "EUR"}, command.Meta{CorrelationID: "flow-9"})
	if err != nil {
		t.Fatal(err)
	}
	p := pay.Appended[0]
	if p.CorrelationID != "flow-9" || !slices.Equal(p.Tags, []string{"payment:" + ref, "rental:" + rentalID}) {
		t.Errorf("payment record = %+v", p)
	}
	again, err := h.Payment(ctx, payment.PreparePayment{Reference: ref, PaymentID: "p2", Amount: 100, Currency: "EUR"}, command.Meta{})
	if err != nil || len(again.Appended) != 0 || again.State.PaymentID != pay.State.PaymentID || !strings.HasPrefix(pay.State.PaymentID, "pay_") {
		t.Errorf("preparing twice: %+v, %v; want nothing appended and the first payment kept", again, err)
	}
	state, records, err := h.LoadPayment(ctx, ref)
	if err != nil || state.Status != payment.StatusPrepared || len(records) != 1 {
		t.Errorf("LoadPayment = %+v, %d records, %v", state, len(records), err)
	}
}

func TestRefusalsAppendNothing(t *testing.T) {
	store := eventstore.NewMemory()
	h := command.New(store)
	_, err := h.Bike(ctx, rental.ReturnBike{BikeID: "b1"}, command.Meta{})
	if !errors.Is(err, rental.ErrBikeNotRegistered) {
		t.Fatalf("err = %v", err)
	}
	if recs, _ := store.Read(ctx, rental.StreamID("b1"), 0); len(recs) != 0 {
		t.Fatalf("a refused command appended %d events", len(recs))
	}
}

func TestUnreadableHistoryIsAnError(t *testing.T) {
	store := eventstore.NewMemory()
	if _, err := store.Append(ctx, rental.StreamID("b1"), 0, eventstore.Event{ID: "x", Type: "BikeStolen", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	h := command.New(store)
	if _, err := h.Bike(ctx, rental.RegisterBike{BikeID: "b1"}, command.Meta{}); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Fatalf("err = %v, want ErrCorruptRecord", err)
	}
	if _, _, err := h.LoadBike(ctx, "b1"); !errors.Is(err, eventstore.ErrCorruptRecord) {
		t.Fatalf("LoadBike err = %v, want ErrCorruptRecord", err)
	}
}
