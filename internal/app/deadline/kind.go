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

// A Kind is one kind of deadline, declared once (docs/decisions/0020-deadline-kinds.md):
// which records open a row and which settle it (Change), when an open row falls due
// (the opening record's own time plus After, never the projector's clock), and which
// ordinary command the sweep sends for a row that is overdue (Act), a command whose
// receiver may decline. The machinery (the projection, the sweep, precise mode,
// rebuild and reshard, the auditor's deadline checks, the listings) works over the
// declared kinds and knows nothing of what they are about: the kinds of the service
// are declared outside this package (package deadlinekinds).
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
	// Change says what a record means for the kind: it opens a row (Settled false),
	// or it settles one; ok is false for a record that does neither. A record of a
	// type the kind reads that does not decode is an error wrapping
	// eventstore.ErrCorruptRecord.
	Change func(r eventstore.Record) (c Change, ok bool, err error)
	// Act sends the kind's command for an overdue row, naming cause as what caused
	// it, and says what its receiver did; detail is a short word for the log (a
	// repair's case, say), or empty. Nil where nothing is sent (the projector's
	// kinds): the sweep then only reports the kind's overdue rows.
	Act func(ctx context.Context, row Row, cause string) (o Outcome, detail string, err error)
	// Valid reports whether the subject of a key read back from the table is one the
	// kind makes; nil accepts any non-empty subject.
	Valid func(subject string) bool
	// Ordered marks a kind all of whose records are in one stream, the row's: a
	// settlement then applies only when its record is later than what the row
	// reflects, and the row keeps how it settled (Change.How) by the latest.
	Ordered bool
	// OneAtATime sends the kind's commands one at a time, oldest first (a repair's),
	// rather than with the sweep's concurrency.
	OneAtATime bool
	// Tally says which of the summary's top-level counts (those the sweep reported
	// before kinds) the kind's rows add to, if any.
	Tally Tally
	// Takes names the kind whose outstanding row, at the same key in another lane,
	// this kind's opening takes over: one write moves the row into this kind's lane,
	// restamped, and settles the other kind's deadline (the return due takes over
	// the process stuck when the bike is approved, the overdue return the return
	// due when it is flagged). A row of this kind, of any other kind, or a settled
	// marker, is never taken over. The taken kind then does not settle the row
	// itself (its Change reports no settlement for the record that implies the
	// takeover).
	Takes string
	// Yields names the kinds whose row for the same subject, found overdue by the
	// same sweep, makes this kind's row wait for the next one: their command is under
	// way, and may settle this row too.
	Yields []string
	// ByHand marks a kind whose rows operators work off by hand (a refund owed, which
	// no provider can make): it has no command, the sweep never reads its lane, which
	// it shares with no other kind, and precise mode never schedules it. Its rows are
	// projected, settled, resharded, listed and audited as every other kind's. It
	// may take another kind's row over (Takes): the deadline that kind's command
	// was sent for then needs an operator, and its row leaves the swept lane, no
	// longer read by any sweep, until it settles.
	ByHand bool
	// ListedAs names the declared kind whose rows a kind worked off by hand lists
	// as in the operators' to-do list (Lister: GET /deadlines, rentalctl pending):
	// the kind it carries on from (the return due, for a return flagged overdue).
	// Empty: its own name. Summaries, metrics, the auditor and precise mode name
	// the kind itself.
	ListedAs string
}

// Listed is the name a Lister lists the kind's rows under: ListedAs, or else its
// own.
func (k Kind) Listed() string { return cmp.Or(k.ListedAs, k.Name) }

// Tally names a group of the summary's top-level counts.
type Tally int

// Tallies.
const (
	// TallyNone: the kind's rows are counted in its own summary only.
	TallyNone Tally = iota
	// TallyDue: Found, Cancelled, Declined, NothingToDo, Failed and OldestOverdue,
	// and Cutoff.
	TallyDue
	// TallyStuck: Stuck, StuckRepaired and StuckLeft, and StuckCutoff.
	TallyStuck
)

// Lane is the index partitions of one sort of row: of one kind's rows, or of the
// cancellations owed to the provider (OwedLane), or of the parked stream records
// (ParkedLane); shard s of a lane is the partition Prefix+s ("payment#0"). A row
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
		if k.Name == "" || strings.Trim(k.Name, "abcdefghijklmnopqrstuvwxyz") != "" {
			errs = append(errs, fmt.Errorf("deadline: kind %q: want a name of lower-case letters", k.Name))
		}
		if k.Prefix == "" || k.After < 0 || (k.After == 0 && !k.ByHand) || k.Change == nil {
			errs = append(errs, fmt.Errorf("deadline: kind %q: want a prefix, a positive duration (or zero, by hand) and Change", k.Name))
		}
		if k.ByHand && (k.Act != nil || len(k.Yields) > 0 || k.Tally != TallyNone) {
			errs = append(errs, fmt.Errorf("deadline: kind %q is worked off by hand: want no command, yield or tally", k.Name))
		}
		if k.ListedAs != "" && (!k.ByHand || k.ListedAs == k.Name) {
			errs = append(errs, fmt.Errorf("deadline: kind %q lists as %q: only a kind worked off by hand lists as another", k.Name, k.ListedAs))
		}
		if k.Lane() == OwedLane || k.Lane() == ParkedLane {
			errs = append(errs, fmt.Errorf("deadline: kind %q: the name is the sweep's own rows'", k.Name))
		}
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
		if k.ListedAs != "" {
			i := slices.IndexFunc(kinds, func(o Kind) bool { return o.Name == k.ListedAs })
			if i >= 0 && (kinds[i].ByHand || kinds[i].ListedAs != "") {
				errs = append(errs, fmt.Errorf("deadline: kind %q lists as %q: want a kind that is swept and lists as itself", k.Name, k.ListedAs))
			}
		}
		if k.Takes == "" {
			continue
		}
		i := slices.IndexFunc(kinds, func(o Kind) bool { return o.Name == k.Takes })
		if i >= 0 && (kinds[i].Prefix != k.Prefix) {
			errs = append(errs, fmt.Errorf("deadline: kind %q takes over %q: want a declared kind of the same prefix", k.Name, k.Takes))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Kinds{}, err
	}
	return Kinds{list: slices.Clone(kinds)}, nil
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

// OfKey returns the kind of a table key and the key's subject; ok is false for a
// key of no declared kind, or whose subject the kind does not make. Where kinds
// share the key's prefix, it is the first of them: OfLaneKey tells them apart.
func (ks Kinds) OfKey(key string) (k Kind, subject string, ok bool) {
	for _, k := range ks.list {
		if s, ok := k.SubjectOf(key); ok {
			return k, s, true
		}
	}
	return Kind{}, "", false
}

// OfLaneKey is OfKey for a row kept in the partition shard (a lane's prefix and a
// number).
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
	return Kinds{list: slices.DeleteFunc(slices.Clone(ks.list), func(k Kind) bool { return k.ByHand })}
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
		c, ok, err := k.Change(r)
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
// pendingtable.Projection and Memory are.
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
