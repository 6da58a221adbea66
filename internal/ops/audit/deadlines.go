package audit

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// The deadline invariants of every declared kind: the payment due's, checked
// against its payment's events (checkRentalRows, checkOutstandingRows), and those
// of every kind that has no older, more specific ones of its own (the process
// stuck has OpenMissing and OpenStale, the cancellation owed OwedMissing and
// OwedStale), checked against the records its Changes read: a parked record's
// row against its parking stream, a refund owed's against its payment's.
const (
	// DeadlineMissing: a row of a kind was opened by its events and not settled,
	// but the Deadlines table has no outstanding row for it: the sweep would
	// never notice it overdue (or, for a kind worked off by hand, operators would
	// never see it listed).
	DeadlineMissing = "deadline-missing"
	// DeadlineStale: the Deadlines table has an outstanding row of a kind
	// that its events never opened, or settled.
	DeadlineStale = "deadline-stale"
)

// kindsOf returns the kinds an audit checks generically: kinds but those with
// invariants of their own.
func kindsOf(kinds deadlines.Kinds) []deadlines.Kind {
	return slices.DeleteFunc(kinds.All(), func(k deadlines.Kind) bool {
		return k.Name == deadlinekinds.Payment || k.Name == deadlinekinds.Stuck || k.Name == deadlinekinds.Cancellation
	})
}

// deadlineState is what the events of the streams read say of one row of a kind.
type deadlineState struct {
	stream    string // where it was opened, or else settled
	opened    bool
	openedAt  time.Time
	settled   bool
	settledAt time.Time
}

// deadlineKey names a row of a kind: the kind's name, the row's table key and its
// subject.
type deadlineKey struct{ kind, key, subject string }

// observeKinds notes what r means for the rows of kinds, from stream, reading it
// as the projector does (dynamo.RecordOf).
func observeKinds(kinds []deadlines.Kind, states map[deadlineKey]*deadlineState, stream string, rec eventstore.Record) error {
	r := dynamo.RecordOf(rec)
	for _, k := range kinds {
		c, ok, err := k.Changes.Change(r)
		if err != nil || !ok {
			if err != nil {
				return err
			}
			continue
		}
		note(states, deadlineKey{k.Name, k.Key(c.Subject), c.Subject}, stream, !c.Settled, r.At)
		if s := states[deadlineKey{k.Name, k.Key(c.Subject), c.Subject}]; k.Ordered && !c.Settled && s.settled {
			s.settled, s.opened, s.openedAt = false, true, r.At // an ordered kind's records come in its one stream's order: a later opening opens the row again
		}
		// An opening that takes another kind's row over ends that kind's deadline:
		// its row is now this kind's, in this kind's partitions.
		if i := slices.IndexFunc(kinds, func(o deadlines.Kind) bool { return o.Name == k.Takes }); !c.Settled && i >= 0 {
			note(states, deadlineKey{kinds[i].Name, kinds[i].Key(c.Subject), c.Subject}, stream, false, r.At)
		}
	}
	return nil
}

// note notes that a row's events opened it (opens) or settled it at at, in stream.
func note(states map[deadlineKey]*deadlineState, key deadlineKey, stream string, opens bool, at time.Time) {
	s := states[key]
	if s == nil {
		s = &deadlineState{stream: stream}
		states[key] = s
	}
	switch {
	case !opens && !s.settled:
		s.settled, s.settledAt = true, at
	case opens && !s.opened:
		s.opened, s.openedAt, s.stream = true, at, stream
	}
}

// mergeKinds merges what one stream's events said of the kinds' rows.
func (a *auditor) mergeKinds(states map[deadlineKey]*deadlineState) {
	for key, s := range states {
		m := a.kindStates[key]
		if m == nil {
			a.kindStates[key] = s
			continue
		}
		if s.opened && (!m.opened || s.openedAt.Before(m.openedAt)) {
			m.opened, m.openedAt, m.stream = true, s.openedAt, s.stream
		}
		if s.settled && (!m.settled || s.settledAt.Before(m.settledAt)) {
			m.settled, m.settledAt = true, s.settledAt
		}
	}
}

// checkKinds reports the rows of the kinds checked generically that the table
// lacks or holds too long; what happened after recent is not reported unless the
// system is quiet.
func (a *auditor) checkKinds(recent time.Time) {
	quiet := a.opts.Quiet
	keys := make([]deadlineKey, 0, len(a.kindStates)+len(a.kindRows))
	for k := range a.kindStates {
		keys = append(keys, k)
	}
	for k := range a.kindRows {
		if _, ok := a.kindStates[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(x, y deadlineKey) int {
		if x.kind != y.kind {
			return compare(x.kind, y.kind)
		}
		return compare(x.key, y.key)
	})
	for _, key := range keys {
		s, row := a.kindStates[key], a.kindRows[key]
		_, outstanding := a.kindRows[key]
		switch {
		case s != nil && s.opened && !s.settled && !outstanding && (quiet || s.openedAt.Before(recent)):
			a.violate(DeadlineMissing, fmt.Sprintf("%s %s deadline opened at %s (%s) is not settled, but the Deadlines table has no outstanding row for it: %s", article(key.kind), key.kind, s.openedAt.Format(time.RFC3339), key.key, a.unseen(key.kind)), s.stream)
			a.stuckRow(key)
		case outstanding && (s == nil || !s.opened) && (quiet || row.opened.Before(recent)):
			a.violate(DeadlineStale, fmt.Sprintf("the Deadlines table has an outstanding %s row %s that no event opened", key.kind, key.key))
		case outstanding && s.settled && (quiet || s.settledAt.Before(recent)):
			a.violate(DeadlineStale, fmt.Sprintf("the Deadlines table has an outstanding %s row %s, which settled at %s", key.kind, key.key, s.settledAt.Format(time.RFC3339)), s.stream)
			a.stuckRow(key)
		}
	}
}

// stuckRow names, on the last violation, the rental a repair of the row of key
// mends: the rental it is about. A parked record's row is about no rental: its
// parking stream is no rental's, and a rebuild mends it.
func (a *auditor) stuckRow(key deadlineKey) {
	if key.kind != deadlinekinds.Redelivery {
		a.stuck(deadlinekinds.RentalOf(key.kind, key.subject))
	}
}

// unseen says who would never see a missing row of the kind named kind: the sweep,
// or, for a kind worked off by hand, the operators who list it.
func (a *auditor) unseen(kind string) string {
	for _, k := range a.kinds {
		if k.Name == kind && !k.Swept() {
			return "operators would never see it listed"
		}
	}
	return "the sweep would never notice it overdue"
}

// article is the indefinite article before word.
func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

func compare(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
