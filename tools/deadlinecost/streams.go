package deadlinecost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// Where the records that open, settle and take over each kind's rows are, in
// streams (deadlinekinds declares which records they are): a design that reads the
// event store instead of keeping a marker or a pointer reads these streams. The
// payment due opens and settles in the payment's stream; the process stuck opens
// in the bike's (BikeRequested), settles in the process's (its completion) and is
// taken over in the bike's (RequestApproved); the return due opens and settles in
// the bike's.

// settlingStreams returns the streams whose records settle, or take over, kind's
// row about subject.
func settlingStreams(kind, subject string) ([]string, error) {
	switch kind {
	case deadlinekinds.Payment:
		return []string{payment.StreamID(payment.ReferenceFor(subject))}, nil
	case deadlinekinds.Stuck:
		bike, err := bikeStream(subject)
		return []string{rentalpayment.StreamID(subject), bike}, err
	case deadlinekinds.Return:
		bike, err := bikeStream(subject)
		return []string{bike}, err
	}
	return nil, fmt.Errorf("deadlinecost: no streams declared for kind %q", kind)
}

// openingStream returns the stream whose record opens kind's row about subject.
func openingStream(kind, subject string) (string, error) {
	if kind == deadlinekinds.Payment {
		return payment.StreamID(payment.ReferenceFor(subject)), nil
	}
	return bikeStream(subject)
}

func bikeStream(rentalID string) (string, error) {
	bike, err := rental.BikeIDOf(rentalID)
	if err != nil {
		return "", err
	}
	return rental.StreamID(bike), nil
}

// reads is the event store as one projection of one record reads it: each stream
// at most once, strongly consistently.
type reads struct {
	e       *Env
	streams map[string][]eventstore.Record
}

func newReads(e *Env) *reads { return &reads{e: e, streams: map[string][]eventstore.Record{}} }

func (rd *reads) stream(ctx context.Context, id string) ([]eventstore.Record, error) {
	if recs, ok := rd.streams[id]; ok {
		return recs, nil
	}
	recs, err := rd.e.Events.Read(ctx, id, 1)
	if err != nil {
		return nil, err
	}
	rd.streams[id] = recs
	return recs, nil
}

// settled reports whether the event store holds a record that settles k's row about
// subject, or one that takes it over.
func (rd *reads) settled(ctx context.Context, k deadlines.Kind, subject string) (bool, error) {
	streams, err := settlingStreams(k.Name, subject)
	if err != nil {
		return false, err
	}
	for _, s := range streams {
		found, err := rd.find(ctx, s, func(c deadlines.KindChange) bool {
			return c.Subject == subject && ((c.Kind.Name == k.Name && c.Settled) || (!c.Settled && c.Kind.Takes == k.Name))
		})
		if err != nil || found != nil {
			return found != nil, err
		}
	}
	return false, nil
}

// errNotOpened is due's answer for a row that no record opened.
var errNotOpened = errors.New("deadlinecost: no record opens it")

// due returns when k's row about subject falls due, from the record that opened
// it.
func (rd *reads) due(ctx context.Context, k deadlines.Kind, subject string) (time.Time, error) {
	s, err := openingStream(k.Name, subject)
	if err != nil {
		return time.Time{}, err
	}
	var change deadlines.KindChange
	found, err := rd.find(ctx, s, func(c deadlines.KindChange) bool {
		change = c
		return c.Subject == subject && c.Kind.Name == k.Name && !c.Settled
	})
	if err != nil {
		return time.Time{}, err
	}
	if found == nil {
		return time.Time{}, fmt.Errorf("%w: %s row of %s", errNotOpened, k.Name, subject)
	}
	return k.DueAt(change.Change, found.RecordedAt), nil
}

// find returns the first record of stream s with a change that match accepts.
func (rd *reads) find(ctx context.Context, s string, match func(deadlines.KindChange) bool) (*eventstore.Record, error) {
	recs, err := rd.stream(ctx, s)
	if err != nil {
		return nil, err
	}
	for i := range recs {
		changes, err := rd.e.changes(recs[i])
		if err != nil {
			return nil, err
		}
		for _, c := range changes {
			if match(c) {
				return &recs[i], nil
			}
		}
	}
	return nil, nil
}
