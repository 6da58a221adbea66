package deadlinecost

import (
	"context"
	"fmt"

	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/tools/rentalcost"
)

// Promises are what a design was seen to keep, each from a case played on the
// emulator (Check): true where it kept it.
type Promises struct {
	// Removed: after each path, the sweep and the listings read none of the
	// rental's rows (every settlement removes its row at once).
	Removed bool
	// Replayed: every record of an approved rental projected again, in order (a
	// batch delivered again, a rebuild over a live table), leaves nothing.
	Replayed bool
	// Late: the process's completion projected before its bike's BikeRequested
	// (another stream) leaves no stuck row.
	Late bool
	// Raced: a rejected rental's settlement appended and projected while its
	// BikeRequested is being projected, in the gap between the design's guard and
	// its write, leaves no stuck row.
	Raced bool
	// Unseen: while a replayed opening is being projected, the sweep and the
	// listings never see its row (a design that puts, then checks, shows it for the
	// length of the check).
	Unseen bool
}

// Kept reports whether every promise was kept.
func (p Promises) Kept() bool { return p.Removed && p.Replayed && p.Late && p.Raced && p.Unseen }

// Broken names the promises not kept, in words.
func (p Promises) Broken() []string {
	var out []string
	for _, b := range []struct {
		kept bool
		what string
	}{
		{p.Removed, "a settled row stays where the sweep and the listings read it"},
		{p.Replayed, "a replayed opening brings a settled row back"},
		{p.Late, "a late opening from another stream brings a settled row back"},
		{p.Raced, "a settlement projected during an opening's guard leaves the row"},
		{p.Unseen, "a replayed opening's row is seen until its check deletes it"},
	} {
		if !b.kept {
			out = append(out, b.what)
		}
	}
	return out
}

// Check plays each case of Promises through d.
func (b *Bench) Check(ctx context.Context, d Design) (Promises, error) {
	var p Promises
	var err error
	if p.Removed, err = b.removed(ctx, d); err != nil {
		return p, err
	}
	if p.Replayed, p.Unseen, err = b.replayed(ctx, d); err != nil {
		return p, err
	}
	if p.Late, err = b.late(ctx, d); err != nil {
		return p, err
	}
	p.Raced, err = b.raced(ctx, d)
	return p, err
}

func (b *Bench) removed(ctx context.Context, d Design) (bool, error) {
	removed := true
	for _, path := range rentalcost.Paths() {
		_, r, err := b.Measure(ctx, d, path)
		if err != nil {
			return false, err
		}
		left, err := d.Outstanding(ctx, b.Env(d), r.ID)
		if err != nil {
			return false, err
		}
		removed = removed && len(left) == 0
	}
	return removed, nil
}

func (b *Bench) replayed(ctx context.Context, d Design) (replayed, unseen bool, err error) {
	_, r, err := b.Measure(ctx, d, rentalcost.Approved)
	if err != nil {
		return false, false, err
	}
	e := b.Env(d)
	unseen = true
	e.Between = func(ctx context.Context) {
		if left, err2 := d.Outstanding(ctx, e, r.ID); err2 != nil || len(left) > 0 {
			unseen = false
		}
	}
	for _, rec := range r.Records {
		if err := d.Project(ctx, e, rec); err != nil {
			return false, false, err
		}
	}
	left, err := d.Outstanding(ctx, b.Env(d), r.ID)
	return len(left) == 0, unseen, err
}

// late projects a rejected rental's records with its process's completion first.
func (b *Bench) late(ctx context.Context, d Design) (bool, error) {
	id := b.NewRental()
	bike, _ := rental.BikeIDOf(id)
	recs, err := newAppender(b.store).add(ctx, eventsOf(rentalcost.Rejected, bike, id), nil)
	if err != nil {
		return false, err
	}
	e := b.Env(d)
	last := recs[len(recs)-1]
	for _, rec := range append([]eventstore.Record{last}, recs[:len(recs)-1]...) {
		if err := d.Project(ctx, e, rec); err != nil {
			return false, err
		}
	}
	return b.nothingLeft(ctx, d, id)
}

// raced projects a rejected rental's BikeRequested with everything after it
// appended and projected in the gap the design leaves (after it, for a design that
// leaves none).
func (b *Bench) raced(ctx context.Context, d Design) (bool, error) {
	id := b.NewRental()
	bike, _ := rental.BikeIDOf(id)
	events := eventsOf(rentalcost.Rejected, bike, id)
	ap := newAppender(b.store)
	first, err := ap.add(ctx, events[:1], nil)
	if err != nil {
		return false, err
	}
	e := b.Env(d)
	var rest error
	played := false
	play := func(ctx context.Context) {
		played = true
		_, rest = ap.add(ctx, events[1:], func(r eventstore.Record) error { return d.Project(ctx, b.Env(d), r) })
	}
	e.Between = func(ctx context.Context) {
		if !played {
			play(ctx)
		}
	}
	if err := d.Project(ctx, e, first[0]); err != nil {
		return false, err
	}
	if !played {
		play(ctx)
	}
	if rest != nil {
		return false, fmt.Errorf("deadlinecost: the settlement in the gap: %w", rest)
	}
	return b.nothingLeft(ctx, d, id)
}

func (b *Bench) nothingLeft(ctx context.Context, d Design, id string) (bool, error) {
	left, err := d.Outstanding(ctx, b.Env(d), id)
	if err != nil {
		return false, err
	}
	return len(left) == 0, nil
}
