package deadlines

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A Kind is one kind of deadline, declared once: which records open a row and which
// settle it (Changes), when an open row falls due (the opening record's own time
// plus After), and what is done once it is overdue (Work: a command the sweep
// sends, Send, or operators' work by hand, ByHand). Everything else (the
// projection, the index, the sweep, the listings, precise schedules) works over the
// declared kinds and knows nothing of what they are about.
type Kind struct {
	// Name names the kind in rows, summaries, metrics and listings: lower-case ASCII
	// letters, digits and hyphens, starting with a letter, at most 64 of them, unique
	// among the declared kinds.
	Name string
	// Prefix starts the key of every row of the kind; the rest of the key is the
	// row's subject. Empty: the name and "#". Kinds may share a prefix, and then
	// their rows a key: one kind's opening may then take the other's row over
	// (Takes).
	Prefix string
	// After is how long after its opening record a row falls due: positive, or zero
	// for a row due as soon as it opens (work that waits for nothing but a sweep, or
	// an operator).
	After time.Duration
	// Changes says what each record means for the kind's rows: Events for the
	// common case.
	Changes Changes
	// Work is what is done for an overdue row: Send (the sweep sends a command) or
	// ByHand (operators work it off; the sweep never reads the kind's rows).
	Work Work
	// Valid reports whether a subject read back from the index is one the kind
	// makes; nil accepts any non-empty subject.
	Valid func(subject string) bool
	// Ordered: every record of the kind is in the row's one stream, so the row
	// follows the stream's positions, whatever order the records come in: a record
	// applies only when it is later than what the row reflects. A later opening
	// opens a settled row again, or moves an outstanding one's due time to its own
	// (a receiver that puts the row off records so); a replayed or late record,
	// older than what the row reflects, changes nothing.
	Ordered bool
	// Takes names the kind of the same prefix whose outstanding row at the same key
	// this kind's opening takes over, in one write (an order shipped takes its
	// confirmation's row over as a delivery due).
	Takes string
	// Yields names the kinds whose overdue row for the same subject, found by the
	// same sweep, makes this kind's row wait for the next sweep.
	Yields []string
}

// Changes reads records for one kind.
type Changes interface {
	// Change says what r means for the kind: it opens a row (Settled false), or it
	// settles one; ok is false for a record that does neither. A record of a type
	// the kind reads that does not decode is an error wrapping ErrCorruptRecord. A
	// kind another takes over (Kind.Takes) reports no settlement for the record
	// that implies the takeover.
	Change(r Record) (c Change, ok bool, err error)
}

// Change is what a record means for one kind's row.
type Change struct {
	// Subject is what the row is about, and the rest of its key: an order id.
	Subject string
	// Settled is false for a record that opens the row, true for one that settles
	// it. A settlement is final unless the kind is Ordered; an opening never brings
	// a row back that settled later in its stream.
	Settled bool
	// How says how the row settled ("confirmed"), kept on its marker.
	How string
	// Due, for an opening, is when the row falls due if the record itself says so
	// (a receiver that puts the row off, a deadline carried on from an earlier
	// one); zero: the record's own time plus the kind's After.
	Due time.Time
}

// Events is the Changes of the common case: a record of one of the types Opens
// opens the row of its subject, one of the types Settles settles it (How is the
// settling type), and every other record means nothing to the kind.
type Events struct {
	Opens   []string
	Settles []string
	// Subject names what a record of those types is about; an error is the
	// record's (wrap ErrCorruptRecord). Nil: the record's stream.
	Subject func(r Record) (string, error)
}

// Change implements Changes.
func (e Events) Change(r Record) (Change, bool, error) {
	opens, settles := slices.Contains(e.Opens, r.Type), slices.Contains(e.Settles, r.Type)
	if !opens && !settles {
		return Change{}, false, nil
	}
	subject := r.Stream
	if e.Subject != nil {
		var err error
		if subject, err = e.Subject(r); err != nil {
			return Change{}, false, fmt.Errorf("deadlines: %s %s at %d: %w", r.Type, r.Stream, r.Position, err)
		}
	}
	if subject == "" {
		return Change{}, false, fmt.Errorf("%w: %s %s at %d names no subject", ErrCorruptRecord, r.Type, r.Stream, r.Position)
	}
	c := Change{Subject: subject, Settled: settles}
	if settles {
		c.How = r.Type
	}
	return c, true, nil
}

// Validate reports a declaration that opens nothing, or a type that both opens and
// settles.
func (e Events) Validate() error {
	if len(e.Opens) == 0 {
		return errors.New("no record type opens a row")
	}
	for _, t := range e.Opens {
		if t == "" || slices.Contains(e.Settles, t) {
			return fmt.Errorf("record type %q: want a non-empty type that opens or settles, not both", t)
		}
	}
	if slices.Contains(e.Settles, "") {
		return errors.New("an empty record type settles")
	}
	return nil
}

// Work is what is done for a kind's overdue rows: Send or ByHand, and nothing else.
type Work interface{ work() }

// Send is the work of a kind whose overdue rows the sweep sends Command for.
type Send struct {
	// Command is what the sweep sends for each overdue row. Nil sends nothing (a
	// kind declared to be listed or counted): the sweep reports its overdue rows
	// as left.
	Command Command
	// OneAtATime sends the kind's rows one at a time, soonest due first, rather
	// than with the sweep's concurrency.
	OneAtATime bool
	// Retry spaces the sends of a row that stays overdue: for a receiver that
	// records nothing when it declines or fails, so that the row is not sent at
	// every sweep. Zero: the row is sent at every sweep until it settles; a
	// receiver that puts the row off records a later opening instead (Ordered).
	Retry Backoff
}

// ByHand is the work of a kind whose rows operators work off by hand: no command
// is sent and the sweep never reads its rows, which it shares with no other kind.
// Its rows are projected, settled, listed and counted as every other kind's. It
// may take another kind's row over (Takes): the deadline that kind's command was
// sent for then needs an operator, and its row leaves the swept kind until it
// settles.
type ByHand struct {
	// ListedAs names the swept kind the rows list as (Kinds.Listings, Query.Kind):
	// the kind it carries on from. Empty: the kind's own name.
	ListedAs string
}

func (Send) work()   {}
func (ByHand) work() {}

// Command is what the sweep sends for an overdue row of a kind.
type Command interface {
	// Send sends the command for row, naming cause as what caused it (for the
	// receiver's records), and says what the receiver did. It must be safe to send
	// twice: two sweeps may overlap, and a sweep may fail after sending.
	Send(ctx context.Context, row Row, cause string) (Outcome, error)
}

// CommandFunc is a function as a Command.
type CommandFunc func(ctx context.Context, row Row, cause string) (Outcome, error)

// Send implements Command.
func (f CommandFunc) Send(ctx context.Context, row Row, cause string) (Outcome, error) {
	return f(ctx, row, cause)
}

// Outcome is what the receiver of an overdue row's command did.
type Outcome string

// Outcomes.
const (
	// Acted: the receiver did what the command asks (cancelled, reminded).
	Acted Outcome = "acted"
	// Declined: the receiver would not (the work was done meanwhile, or the case
	// needs an operator); the row's settlement is the receiver's to record.
	Declined Outcome = "declined"
	// NothingToDo: the receiver found nothing left to do.
	NothingToDo Outcome = "nothingToDo"
)

// Command returns the command the sweep sends for the kind's overdue rows; ok is
// false for a kind worked off by hand, or declared without a command.
func (k Kind) Command() (c Command, ok bool) {
	s, swept := k.Work.(Send)
	return s.Command, swept && s.Command != nil
}

// Swept reports whether the sweep reads the kind's rows: its work is Send.
func (k Kind) Swept() bool {
	_, ok := k.Work.(Send)
	return ok
}

// Listed is the name the kind's rows are listed under: ByHand.ListedAs, or else
// its own.
func (k Kind) Listed() string {
	if h, ok := k.Work.(ByHand); ok && h.ListedAs != "" {
		return h.ListedAs
	}
	return k.Name
}

// KeyPrefix is what starts the key of every row of the kind: Prefix, or the name
// and "#".
func (k Kind) KeyPrefix() string {
	if k.Prefix == "" {
		return k.Name + "#"
	}
	return k.Prefix
}

// Key is the key of the kind's row about subject.
func (k Kind) Key(subject string) string { return k.KeyPrefix() + subject }

// SubjectOf returns the subject of a key of the kind; ok is false for a key of
// another prefix, or a subject the kind does not make.
func (k Kind) SubjectOf(key string) (string, bool) {
	s, found := strings.CutPrefix(key, k.KeyPrefix())
	if !found || s == "" || (k.Valid != nil && !k.Valid(s)) {
		return "", false
	}
	return s, true
}

// DueAt is when a row of the kind that c opens, recorded at recorded, falls due.
func (k Kind) DueAt(c Change, recorded time.Time) time.Time {
	if !c.Due.IsZero() {
		return c.Due.UTC()
	}
	return recorded.Add(k.After).UTC()
}

// MaxName is the longest kind name.
const MaxName = 64

// check returns what is wrong with the kind on its own.
func (k Kind) check() []error {
	var errs []error
	wrong := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("deadlines: kind %q: "+format, append([]any{k.Name}, args...)...))
	}
	if !validName(k.Name) {
		wrong("want a name of lower-case ASCII letters, digits and hyphens, starting with a letter, at most %d", MaxName)
	}
	if k.After < 0 {
		wrong("After %s: want a positive duration, or zero for a row due as soon as it opens", k.After)
	}
	if k.Changes == nil {
		wrong("no Changes: say which records open and settle its rows")
	} else if v, ok := k.Changes.(interface{ Validate() error }); ok {
		if err := v.Validate(); err != nil {
			wrong("Changes: %w", err)
		}
	}
	if k.Work == nil {
		wrong("no Work: want Send or ByHand")
	}
	if s, ok := k.Work.(Send); ok {
		if err := s.Retry.check(); err != nil {
			wrong("Retry: %w", err)
		}
	}
	if !k.Swept() && len(k.Yields) > 0 {
		wrong("worked off by hand: it yields to nothing")
	}
	if h, ok := k.Work.(ByHand); ok && h.ListedAs == k.Name {
		wrong("lists as itself: leave ListedAs empty")
	}
	if k.Takes == k.Name && k.Name != "" {
		wrong("takes itself over")
	}
	if slices.Contains(k.Yields, k.Name) {
		wrong("yields to itself")
	}
	return errs
}

// validName reports whether s is a kind's name.
func validName(s string) bool {
	if s == "" || len(s) > MaxName || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for _, c := range []byte(s) {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Kinds is a set of declared kinds, checked together.
type Kinds struct {
	list []Kind
}

// NewKinds checks kinds and returns them as a set, in the order given: the order
// the sweep covers them in. Every kind must be valid on its own; names must be
// unique; no kind's key prefix may start another's but its own; a kind that takes
// another over must share its prefix; a kind listed as another must name a swept
// kind of the same prefix; the kinds a kind yields to must be swept. The error names each kind and
// what is wrong with it.
func NewKinds(kinds ...Kind) (Kinds, error) {
	var errs []error
	if len(kinds) == 0 {
		errs = append(errs, errors.New("deadlines: no kinds declared"))
	}
	for i, k := range kinds {
		errs = append(errs, k.check()...)
		for _, o := range kinds[:i] {
			switch {
			case o.Name == k.Name:
				errs = append(errs, fmt.Errorf("deadlines: kind %q declared twice", k.Name))
			case o.KeyPrefix() != k.KeyPrefix() && (strings.HasPrefix(o.KeyPrefix(), k.KeyPrefix()) || strings.HasPrefix(k.KeyPrefix(), o.KeyPrefix())):
				errs = append(errs, fmt.Errorf("deadlines: kinds %q and %q: key prefixes %q and %q overlap", o.Name, k.Name, o.KeyPrefix(), k.KeyPrefix()))
			}
		}
	}
	byName := func(name string) (Kind, bool) {
		i := slices.IndexFunc(kinds, func(o Kind) bool { return o.Name == name })
		if i < 0 {
			return Kind{}, false
		}
		return kinds[i], true
	}
	for _, k := range kinds {
		if listed := k.Listed(); listed != k.Name {
			if o, ok := byName(listed); !ok || !o.Swept() || o.KeyPrefix() != k.KeyPrefix() {
				errs = append(errs, fmt.Errorf("deadlines: kind %q lists as %q: want a declared kind that is swept, of the same prefix", k.Name, listed))
			}
		}
		if k.Takes != "" {
			if o, ok := byName(k.Takes); !ok || o.KeyPrefix() != k.KeyPrefix() {
				errs = append(errs, fmt.Errorf("deadlines: kind %q takes over %q: want a declared kind of the same prefix", k.Name, k.Takes))
			}
		}
		for _, y := range k.Yields {
			if o, ok := byName(y); !ok || !o.Swept() {
				errs = append(errs, fmt.Errorf("deadlines: kind %q yields to %q: want a declared kind that is swept", k.Name, y))
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Kinds{}, err
	}
	return Kinds{list: slices.Clone(kinds)}, nil
}

// MustKinds is NewKinds for declarations known to be valid; it panics on an
// invalid one, as regexp.MustCompile does. Declarations made from settings go
// through NewKinds.
func MustKinds(kinds ...Kind) Kinds {
	ks, err := NewKinds(kinds...)
	if err != nil {
		panic(err)
	}
	return ks
}

// All returns the kinds, in their order.
func (ks Kinds) All() []Kind { return slices.Clone(ks.list) }

// Len is how many kinds there are.
func (ks Kinds) Len() int { return len(ks.list) }

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

// Swept returns the kinds the sweep covers, in their order: all but those worked
// off by hand.
func (ks Kinds) Swept() []Kind {
	return slices.DeleteFunc(slices.Clone(ks.list), func(k Kind) bool { return !k.Swept() })
}

// ListedAs returns the kinds whose rows are listed under name, in their order.
func (ks Kinds) ListedAs(name string) []Kind {
	var out []Kind
	for _, k := range ks.list {
		if k.Listed() == name {
			out = append(out, k)
		}
	}
	return out
}

// Changes returns what r means for each kind that reads it, in the kinds' order.
func (ks Kinds) Changes(r Record) ([]KindChange, error) {
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
