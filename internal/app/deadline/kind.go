package deadline

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/eventstore"
)

// A Kind is one kind of deadline, declared once (docs/decisions/0020-deadline-kinds.md,
// docs/decisions/0030-a-small-machinery.md): which records open a row and which
// settle it (Changes), when an open row falls due (the opening record's own time
// plus After, never the projector's clock), and what is done once it is overdue
// (Work: a command the sweep sends, Send, or operators' work by hand, ByHand). The
// machinery (the projection, the sweep, precise mode, rebuild and reshard, the
// auditor's deadline checks, the listings) works over the declared kinds and knows
// nothing of what they are about: the kinds of the service are declared outside
// this package (package deadlinekinds).
type Kind struct {
	// Name names the kind in rows, summaries, metrics and the operator API: lower-case
	// ASCII letters, unique among the declared kinds.
	Name string
	// Prefix starts the table key of every row of the kind; the rest of the key is the
	// row's subject (Row.Subject). Kinds may share a prefix, and then their rows a
	// key (Takes): a key and its lane say its kind.
	Prefix string
	// After is how long after its opening record a row falls due: positive, or
	// zero for a kind worked off by hand (due as soon as it opens).
	After time.Duration
	// Changes says what each record means for the kind's rows.
	Changes Changes
	// Work is what is done for an overdue row: Send (the sweep sends a command) or
	// ByHand (operators work it off; the sweep never reads the kind's lane).
	Work Work
	// Valid reports whether the subject of a key read back from the table is one the
	// kind makes; nil accepts any non-empty subject.
	Valid func(subject string) bool
	// Ordered: every record of the kind is in the row's one stream, so the row
	// follows it in order: a settlement applies only when it is later than what the
	// row reflects, and an opening later than the settlement opens the row again (a
	// refund owed once the refund the provider reported made failed); a replayed
	// or late opening, older than the settlement, never does.
	Ordered bool
	// Takes names the kind whose outstanding row at the same key this kind's opening
	// takes over, in one write (the return due takes the process stuck over when the
	// bike is approved, the overdue return the return due when it is flagged).
	Takes string
	// Yields names the kinds whose overdue row for the same subject, found by the
	// same sweep, makes this kind's row wait for the next sweep.
	Yields []string
}

// Changes reads records for one kind: deadlinekinds declares one type per kind of
// the service.
type Changes interface {
	// Change says what r means for the kind: it opens a row (Settled false), or it
	// settles one; ok is false for a record that does neither. A record of a type
	// the kind reads that does not decode is an error wrapping
	// eventstore.ErrCorruptRecord. A kind another takes over (Kind.Takes) reports
	// no settlement for the record that implies the takeover.
	Change(r eventstore.Record) (c Change, ok bool, err error)
}

// Work is what is done for a kind's overdue rows: Send or ByHand, and nothing else.
type Work interface{ work() }

// Send is the work of a kind whose overdue rows the sweep sends Command for. A nil
// Command sends nothing (a declaration without receivers, to list or audit the
// rows): the sweep then only reports the kind's overdue rows, as left.
type Send struct {
	Command Command
}

// ByHand is the work of a kind whose rows operators work off by hand (a refund
// owed, which no provider can make; a return flagged overdue): no command is sent,
// the sweep never reads its lane, which it shares with no other kind, and precise
// mode never schedules it. Its rows are projected, settled, resharded, listed and
// audited as every other kind's. It may take another kind's row over (Takes): the
// deadline that kind's command was sent for then needs an operator, and its row
// leaves the swept lane until it settles.
type ByHand struct {
	// ListedAs names the swept kind the rows list as in the operators' to-do list
	// (Lister: GET /deadlines, rentalctl pending): the kind it carries on from (the
	// return due, for a return flagged overdue). Empty: the kind's own name.
	// Summaries, metrics, the auditor and precise mode name the kind itself.
	ListedAs string
}

func (Send) work()   {}
func (ByHand) work() {}

// Command is what the sweep sends for an overdue row of a kind: deadlinekinds
// declares one type per command of the service (CancelPayment, RepairStuck,
// FlagOverdueReturn).
type Command interface {
	// Send sends the command for row, naming cause as what caused it, and says
	// what its receiver did; detail is a short word for the log (a repair's case,
	// say), or empty.
	Send(ctx context.Context, row Row, cause string) (o Outcome, detail string, err error)
	// OneAtATime reports whether the rows must be sent one at a time, oldest first
	// (a repair's), rather than with the sweep's concurrency.
	OneAtATime() bool
}

// Command returns the command the sweep sends for the kind's overdue rows; ok is
// false for a kind worked off by hand, or declared without a receiver.
func (k Kind) Command() (c Command, ok bool) {
	s, swept := k.Work.(Send)
	return s.Command, swept && s.Command != nil
}

// Swept reports whether the sweep reads the kind's lane: its work is Send.
func (k Kind) Swept() bool {
	_, ok := k.Work.(Send)
	return ok
}

// Listed is the name a Lister lists the kind's rows under: ByHand.ListedAs, or else
// its own.
func (k Kind) Listed() string {
	if h, ok := k.Work.(ByHand); ok && h.ListedAs != "" {
		return h.ListedAs
	}
	return k.Name
}

// Lane is the index partitions of one sort of row: of one kind's rows, or of the
// cancellations owed to the provider (OwedLane, package owed), or of the parked
// stream records (ParkedLane, package parked); shard s of a lane is the partition Prefix+s ("payment#0"). A row
// is stamped in the index with its due time, so that one query per shard whose
// cutoff is the sweep's now finds every overdue row of the lane, in due order, and
// nothing else, and no query for one sort of row ever reads another's.
type Lane struct {
	Prefix string
}

// Shard names the partition of the lane's shard s.
func (l Lane) Shard(s int) string { return fmt.Sprintf("%s%d", l.Prefix, s) }

// LaneOf returns the lane of the rows named name: the name and "#".
func LaneOf(name string) Lane { return Lane{Prefix: name + "#"} }

// Lane is the index partitions the kind's rows are kept in: a lane of its own,
// named for the kind, which no other kind's rows, owed cancellation or parked
// record is in.
func (k Kind) Lane() Lane { return LaneOf(k.Name) }

// Change is what a record means for one kind's deadline.
type Change struct {
	// Subject is what the row is about, and the rest of its key: a rental id.
	Subject string
	// Settled is false for a record that opens the row, true for one that settles
	// it. A settlement is final unless the kind is Ordered; an opening never brings a
	// settled row back.
	Settled bool
	// How says how the row settled ("confirmed", "returned"), kept on its marker.
	How string
	// Due, for an opening, is when the row falls due if the record itself says so
	// (a deadline whose due time a record carries on from an earlier one); zero:
	// the record's own time plus the kind's After.
	Due time.Time
}

// SinceFor returns the opening time of the row c opens, recorded at recorded:
// recorded, or the time c.Due says the row opened at.
func (k Kind) SinceFor(c Change, recorded time.Time) time.Time {
	if c.Due.IsZero() {
		return recorded
	}
	return c.Due.Add(-k.After)
}

// Row is one outstanding deadline.
type Row struct {
	Kind    string    `json:"kind"`
	Subject string    `json:"subject"`
	Since   time.Time `json:"since"` // the opening record's time
	Due     time.Time `json:"due"`
}

// Key is the row's table key.
func (k Kind) Key(subject string) string { return k.Prefix + subject }

// DueAt is when a row opened at since falls due.
func (k Kind) DueAt(since time.Time) time.Time { return since.Add(k.After) }

// Overdue reports whether a row opened at since is overdue at now: at its due time
// exactly it is not yet.
func (k Kind) Overdue(since, now time.Time) bool { return k.DueAt(since).Before(now) }

// Stamp returns the stamp in the index of a row opened at since: its due time,
// Unix milliseconds.
func (k Kind) Stamp(since time.Time) int64 { return k.DueAt(since).UnixMilli() }

// SinceOf reverses Stamp.
func (k Kind) SinceOf(stamp int64) time.Time {
	return time.UnixMilli(stamp).Add(-k.After).UTC()
}

// Outcome is what the receiver of an overdue row's command did.
type Outcome string

// Outcomes.
const (
	// Acted: the receiver did what the command asks (cancelled, flagged, repaired).
	Acted Outcome = "acted"
	// Declined: the receiver would not (the work was done meanwhile, or the case
	// needs an operator); the row's settlement is the receiver's to record.
	Declined Outcome = "declined"
	// NothingToDo: the receiver found nothing left to do.
	NothingToDo Outcome = "nothingToDo"
)

// Kinds is a set of declared kinds, checked: every kind's name, prefix, lane and
// duration is valid, names are unique, every kind has a lane of its own, and no
// prefix starts another but its own.
type Kinds struct {
	list []Kind
}

// NewKinds checks kinds and returns them as a set, in the order given: the order
// the sweep covers them in.
func NewKinds(kinds ...Kind) (Kinds, error) {
	var errs []error
	for i, k := range kinds {
		errs = append(errs, k.check()...)
		for _, o := range kinds[:i] {
			switch {
			case o.Name == k.Name:
				errs = append(errs, fmt.Errorf("deadline: kind %q declared twice", k.Name))
			case o.Prefix != k.Prefix && (strings.HasPrefix(o.Prefix, k.Prefix) || strings.HasPrefix(k.Prefix, o.Prefix)):
				errs = append(errs, fmt.Errorf("deadline: kinds %q and %q: key prefixes %q and %q overlap", o.Name, k.Name, o.Prefix, k.Prefix))
			}
		}
	}
	for _, k := range kinds {
		// A set may leave the taken or listed kind out (precise mode's, which only
		// arms and disarms schedules); a projection is given every kind.
		if listed := k.Listed(); listed != k.Name {
			i := slices.IndexFunc(kinds, func(o Kind) bool { return o.Name == listed })
			if i >= 0 && !kinds[i].Swept() {
				errs = append(errs, fmt.Errorf("deadline: kind %q lists as %q: want a kind that is swept", k.Name, listed))
			}
		}
		i := slices.IndexFunc(kinds, func(o Kind) bool { return o.Name == k.Takes })
		if k.Takes != "" && i >= 0 && kinds[i].Prefix != k.Prefix {
			errs = append(errs, fmt.Errorf("deadline: kind %q takes over %q: want a declared kind of the same prefix", k.Name, k.Takes))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Kinds{}, err
	}
	return Kinds{list: slices.Clone(kinds)}, nil
}

// check returns what is wrong with the kind on its own.
func (k Kind) check() []error {
	var errs []error
	if k.Name == "" || strings.Trim(k.Name, "abcdefghijklmnopqrstuvwxyz") != "" {
		errs = append(errs, fmt.Errorf("deadline: kind %q: want a name of lower-case letters", k.Name))
	}
	if k.Prefix == "" || k.After < 0 || (k.After == 0 && k.Swept()) || k.Changes == nil || k.Work == nil {
		errs = append(errs, fmt.Errorf("deadline: kind %q: want a prefix, a positive duration (or zero, by hand), Changes and Work", k.Name))
	}
	if !k.Swept() && len(k.Yields) > 0 {
		errs = append(errs, fmt.Errorf("deadline: kind %q is worked off by hand: it yields to nothing", k.Name))
	}
	if h, ok := k.Work.(ByHand); ok && h.ListedAs == k.Name {
		errs = append(errs, fmt.Errorf("deadline: kind %q lists as itself: leave ListedAs empty", k.Name))
	}
	if k.Lane() == OwedLane || k.Lane() == ParkedLane {
		errs = append(errs, fmt.Errorf("deadline: kind %q: the name is the sweep's own rows'", k.Name))
	}
	return errs
}

// MustKinds is NewKinds for declarations known to be valid (tests); it panics on an
// invalid one.
func MustKinds(kinds ...Kind) Kinds {
	ks, err := NewKinds(kinds...)
	if err != nil {
		panic(err)
	}
	return ks
}

// All returns the kinds, in their order.
func (ks Kinds) All() []Kind { return slices.Clone(ks.list) }

// Names returns the kinds' names, in their order.
func (ks Kinds) Names() []string {
	out := make([]string, len(ks.list))
	for i, k := range ks.list {
		out[i] = k.Name
	}
	return out
}

// Listings returns the names the kinds' rows are listed under (Kind.Listed),
// sorted, each once.
func (ks Kinds) Listings() []string {
	var out []string
	for _, k := range ks.list {
		out = append(out, k.Listed())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ByName returns the kind named name.
func (ks Kinds) ByName(name string) (Kind, bool) {
	for _, k := range ks.list {
		if k.Name == name {
			return k, true
		}
	}
	return Kind{}, false
}

// OfLaneKey returns the kind of a row kept in the partition shard (a lane's prefix
// and a number) under the table key key, and the key's subject; ok is false for a
// key of no kind declared in that lane, or whose subject the kind does not make.
func (ks Kinds) OfLaneKey(shard, key string) (k Kind, subject string, ok bool) {
	lane := strings.TrimRight(shard, "0123456789")
	for _, k := range ks.list {
		if s, ok := k.SubjectOf(key); ok && k.Lane().Prefix == lane {
			return k, s, true
		}
	}
	return Kind{}, "", false
}

// SubjectOf returns the subject of a key of the kind; ok is false for a key of
// another prefix, or a subject the kind does not make.
func (k Kind) SubjectOf(key string) (string, bool) {
	s, found := strings.CutPrefix(key, k.Prefix)
	if !found || s == "" || (k.Valid != nil && !k.Valid(s)) {
		return "", false
	}
	return s, true
}

// Lanes returns the lanes of the kinds, each once, in the order of the kinds.
func (ks Kinds) Lanes() []Lane {
	var out []Lane
	for _, k := range ks.list {
		if !slices.Contains(out, k.Lane()) {
			out = append(out, k.Lane())
		}
	}
	return out
}

// Lists reports whether a Lister lists rows under name: some kind's Listed name.
func (ks Kinds) Lists(name string) bool {
	return slices.ContainsFunc(ks.list, func(k Kind) bool { return k.Listed() == name })
}

// Swept returns the kinds the sweep covers, in their order: all but those worked off
// by hand.
func (ks Kinds) Swept() Kinds {
	return Kinds{list: slices.DeleteFunc(slices.Clone(ks.list), func(k Kind) bool { return !k.Swept() })}
}

// InLane returns the kinds of lane, in their order.
func (ks Kinds) InLane(l Lane) []Kind {
	var out []Kind
	for _, k := range ks.list {
		if k.Lane() == l {
			out = append(out, k)
		}
	}
	return out
}

// Changes returns what r means for each kind that reads it, in the kinds' order.
func (ks Kinds) Changes(r eventstore.Record) ([]KindChange, error) {
	var out []KindChange
	for _, k := range ks.list {
		c, ok, err := k.Changes.Change(r)
		if err != nil {
			return nil, err
		}
		if ok {
			out = append(out, KindChange{Kind: k, Change: c})
		}
	}
	return out, nil
}

// KindChange is a Change with the kind it is of.
type KindChange struct {
	Kind Kind
	Change
}

// SortRows sorts rows by due time, then by kind and subject.
func SortRows(rows []Row) {
	slices.SortFunc(rows, func(a, b Row) int {
		return cmp.Or(a.Due.Compare(b.Due), cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Subject, b.Subject))
	})
}

// Query asks for part of the to-do list, as operators read it (GET /deadlines,
// rentalctl pending -kind).
type Query struct {
	// Kind is the kind of the rows wanted, as they are listed (Kind.Listed); empty
	// for every kind.
	Kind string
	// Overdue, when set, keeps only the rows overdue at Now (true) or not (false).
	Overdue *bool
	// Now is the clock the rows are overdue or not by.
	Now time.Time
	// Limit is the most rows returned: at least 1.
	Limit int
}

// Lister is the to-do list of every kind, as operators read it:
// deadlinetable.Projection and Memory are.
type Lister interface {
	// Deadlines returns up to q.Limit outstanding rows, each named by the kind it
	// lists as (Kind.Listed), the overdue ones first, each part by due time. It reads at most q.Limit rows from each shard of each lane
	// it queries, and never scans.
	Deadlines(ctx context.Context, q Query) ([]Row, error)
}

// OverdueFirst sorts rows for a listing: those overdue at now first, each part by due
// time.
func OverdueFirst(rows []Row, now time.Time) {
	SortRows(rows)
	slices.SortStableFunc(rows, func(a, b Row) int {
		ao, bo := a.Due.Before(now), b.Due.Before(now)
		switch {
		case ao == bo:
			return 0
		case ao:
			return -1
		}
		return 1
	})
}
