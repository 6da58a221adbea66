// Package deadlinestest is the contract every deadlines.Index keeps, run by Run
// against a fresh projection for each case: the in-memory one (package memory) and
// the DynamoDB table (package dynamo) pass it, and so must any other.
package deadlinestest

import (
	"fmt"
	"strings"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// The contract's kinds, over records of its own: what a kind is about is nothing
// to the machinery. Every record's data names its subject ("subject:<subject>"),
// and some a due time (" due:<RFC 3339>").
var (
	// A "Lent" record opens a loan's row, due an hour later; "Returned" settles it.
	// A "Watched" record opens a watch's row, due a day later; "Unwatched" settles it.
	loan  = deadlines.Kind{Name: "loan", After: time.Hour, Changes: events("Lent", "Returned"), Work: deadlines.Send{}}
	watch = deadlines.Kind{Name: "watch", After: 24 * time.Hour, Changes: events("Watched", "Unwatched"), Work: deadlines.Send{}}
	// A "Held" record opens a hold's row ("item#"), due two hours later; "Released"
	// settles it. "Handed" opens a handover's row, due a day later, taking over the
	// item's hold if it is still outstanding; "Collected" settles it.
	hold     = deadlines.Kind{Name: "hold", Prefix: "item#", After: 2 * time.Hour, Changes: events("Held", "Released"), Work: deadlines.Send{}}
	handover = deadlines.Kind{Name: "handover", Prefix: "item#", After: 24 * time.Hour, Changes: events("Handed", "Collected"), Work: deadlines.Send{}, Takes: "hold"}
	// A renewal follows its stream's positions (Ordered): "Renewable" opens it, due
	// a week later or when the record says, and a later one moves it; "Renewed"
	// settles it.
	renewal = deadlines.Kind{Name: "renewal-due", After: 7 * 24 * time.Hour, Changes: dated{opens: "Renewable", settles: "Renewed"}, Work: deadlines.Send{}, Ordered: true}
	// TestKinds are the kinds most cases run with.
	TestKinds = deadlines.MustKinds(loan, watch, hold, handover, renewal)

	// A chain of kinds over one key ("bill#"): "Drafted" opens a draft's row;
	// "Billed" opens a bill's row, due an hour later, taking the draft over;
	// "Dunned" hands the bill over to the operators, taking its row over into rows
	// no sweep reads, due when the record says, listed as a bill; "Paid" settles
	// the bill, and the dunning.
	draft     = deadlines.Kind{Name: "draft", Prefix: "bill#", After: 3 * time.Hour, Changes: events("Drafted", "Discarded"), Work: deadlines.Send{}}
	bill      = deadlines.Kind{Name: "bill", Prefix: "bill#", After: time.Hour, Changes: events("Billed", "Paid"), Work: deadlines.Send{}, Takes: "draft"}
	dunning   = deadlines.Kind{Name: "dunning", Prefix: "bill#", Changes: dated{opens: "Dunned", settles: "Paid"}, Work: deadlines.ByHand{ListedAs: "bill"}, Takes: "bill"}
	billKinds = deadlines.MustKinds(draft, bill, dunning, hold)
)

// events is the common case: the subject is in the record's data.
func events(opens, settles string) deadlines.Events {
	return deadlines.Events{Opens: []string{opens}, Settles: []string{settles}, Subject: subjectOf}
}

func subjectOf(r deadlines.Record) (string, error) {
	subject, _, _ := strings.Cut(string(r.Data), " due:")
	s, ok := strings.CutPrefix(subject, "subject:")
	if !ok || s == "" {
		return "", fmt.Errorf("%w: %q", deadlines.ErrCorruptRecord, r.Data)
	}
	return s, nil
}

// dated reads records that may name their row's due time: opens opens (due when
// the record says, if it does), settles settles.
type dated struct{ opens, settles string }

func (d dated) Change(r deadlines.Record) (deadlines.Change, bool, error) {
	c, ok, err := events(d.opens, d.settles).Change(r)
	if err != nil || !ok || c.Settled {
		return c, ok, err
	}
	if _, due, found := strings.Cut(string(r.Data), " due:"); found {
		at, err := time.Parse(time.RFC3339Nano, due)
		if err != nil {
			return deadlines.Change{}, false, fmt.Errorf("%w: %q", deadlines.ErrCorruptRecord, r.Data)
		}
		c.Due = at
	}
	return c, true, nil
}

// record is a record of typ about subject, at position in the subject's stream.
func record(typ, subject string, position int64, at time.Time) deadlines.Record {
	return deadlines.Record{Stream: "things-" + subject, Position: position, Type: typ, At: at, Data: []byte("subject:" + subject)}
}

// dueRecord is a record that names its row's due time.
func dueRecord(typ, subject string, position int64, at, due time.Time) deadlines.Record {
	r := record(typ, subject, position, at)
	r.Data = fmt.Appendf(r.Data, " due:%s", due.Format(time.RFC3339Nano))
	return r
}
