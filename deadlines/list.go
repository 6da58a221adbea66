package deadlines

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Query asks for part of the to-do list, as operators read it.
type Query struct {
	// Kind is the name the rows wanted are listed under (Kind.Listed); empty for
	// every kind.
	Kind string
	// Overdue, when set, keeps only the rows overdue at Now (true) or not (false).
	Overdue *bool
	// Now is the clock the rows are overdue or not by; required with Overdue.
	Now time.Time
	// Limit is the most rows returned: 1 to MaxLimit.
	Limit int
	// Token continues a listing where the page that gave it (Page.Next) ended; it
	// must come with the same Kind and Overdue.
	Token string
}

// MaxLimit is the most rows one page lists.
const MaxLimit = 1000

// Page is one page of a listing.
type Page struct {
	// Rows are the rows listed, soonest due first (so the overdue ones first), each
	// named by the kind it is listed as.
	Rows []Row `json:"rows"`
	// Next, when not empty, continues the listing (Query.Token).
	Next string `json:"next,omitempty"`
	// Read is how many items the listing read from the index.
	Read int `json:"-"`
}

// ErrBadQuery reports a query that cannot be answered: an unknown kind, a limit out
// of range, a token that is not one or is another query's.
var ErrBadQuery = errors.New("deadlines: bad query")

// token is where a listing goes on from: after the row (Due, Kind as listed,
// Subject) of the query (ListKind, Overdue). A kind listed as another shares its
// key prefix (NewKinds), so no two outstanding rows share all three.
type token struct {
	ListKind string `json:"l"`
	Overdue  *bool  `json:"o,omitempty"`
	Due      int64  `json:"d"`
	Kind     string `json:"k"`
	Subject  string `json:"s"`
}

// List returns one page of the outstanding rows of kinds in idx that q asks for,
// soonest due first. Each read is one query of a kind's shard, from where the
// page starts (the token's row, or the query's bound) and bounded by the limit, so
// a page reads at most q.Limit+1 rows past where it starts (and the rows due in the
// same millisecond as the token's row or the limit-th) from each shard of each kind
// it lists, never a scan.
func List(ctx context.Context, idx Index, kinds Kinds, q Query) (Page, error) {
	if noIndex(idx) {
		return Page{}, errors.New("deadlines: list: no Index")
	}
	listed, after, err := q.check(kinds)
	if err != nil {
		return Page{}, err
	}
	var (
		all  []Row
		read int
	)
	for _, k := range listed {
		// A page of one more than the limit says whether the limit-th row has
		// another due in the same millisecond after it, which the token must not
		// leave behind; after a token, one more again, the token's own row.
		span := Span{Kind: k, Page: q.Limit + 1}
		if after != nil {
			span.Page++
		}
		if q.Overdue != nil && *q.Overdue {
			span.Before = q.Now
		} else if q.Overdue != nil {
			span.From = q.Now
		}
		if after != nil {
			span.From = latest(span.From, after.Due)
		}
		for shard := range idx.Shards() {
			span.Shard = shard
			got, n, err := listShard(ctx, idx, span, k.Listed(), after, q.Limit)
			read += n
			if err != nil {
				return Page{Read: read}, err
			}
			all = append(all, got...)
		}
	}
	SortRows(all)
	page := Page{Rows: all, Read: read}
	// Each shard gave every row it has past the page's start, or one more than the
	// limit: more rows than the limit in all is the one sign that more follow.
	if len(all) > q.Limit {
		page.Rows = all[:min(len(all), q.Limit)]
		if len(page.Rows) > 0 {
			page.Next = q.next(page.Rows[len(page.Rows)-1])
		}
	}
	return page, nil
}

// listShard reads the rows of one shard in span after the row after (nil: from
// the span's start), named as listed, until it has one more than limit of them, or
// the shard has no more, and every row due at the same time as the limit-th: an
// index orders rows due at the same millisecond as it likes, and the page's token
// must leave none of them behind.
func listShard(ctx context.Context, idx Index, span Span, listed string, after *Row, limit int) ([]Row, int, error) {
	var got []Row
	n, err := idx.Rows(ctx, span, func(page []Row) bool {
		for _, r := range page {
			r.Kind = listed
			if after == nil || compareRows(r, *after) > 0 {
				got = append(got, r)
			}
		}
		return len(got) <= limit || !got[len(got)-1].Due.After(got[limit-1].Due)
	})
	return got, n, err
}

// check returns the kinds q lists and the row its token goes on after, or what is
// wrong with q.
func (q Query) check(kinds Kinds) ([]Kind, *Row, error) {
	if q.Limit < 1 || q.Limit > MaxLimit {
		return nil, nil, fmt.Errorf("%w: limit %d: want 1 to %d", ErrBadQuery, q.Limit, MaxLimit)
	}
	if q.Overdue != nil && q.Now.IsZero() {
		return nil, nil, fmt.Errorf("%w: overdue or not, by no clock: want Now", ErrBadQuery)
	}
	listed := kinds.All()
	if q.Kind != "" {
		listed = kinds.ListedAs(q.Kind)
		if len(listed) == 0 {
			return nil, nil, fmt.Errorf("%w: no kind is listed as %q: want one of %q", ErrBadQuery, q.Kind, kinds.Listings())
		}
	}
	if q.Token == "" {
		return listed, nil, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(q.Token)
	var t token
	if err == nil {
		err = json.Unmarshal(raw, &t)
	}
	if err != nil || !validSubject(kinds, t.Kind, t.Subject) || t.ListKind != q.Kind || !sameOverdue(t.Overdue, q.Overdue) {
		return nil, nil, fmt.Errorf("%w: the token is not one this query gave", ErrBadQuery)
	}
	return listed, &Row{Kind: t.Kind, Subject: t.Subject, Due: time.UnixMilli(t.Due).UTC()}, nil
}

// next returns the token of the page whose last row is last (named as listed).
func (q Query) next(last Row) string {
	b, _ := json.Marshal(token{ListKind: q.Kind, Overdue: q.Overdue, Due: last.Due.UnixMilli(), Kind: last.Kind, Subject: last.Subject})
	return base64.RawURLEncoding.EncodeToString(b)
}

func sameOverdue(a, b *bool) bool {
	return (a == nil) == (b == nil) && (a == nil || *a == *b)
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// validSubject reports whether subject is one a kind listed as listed makes.
func validSubject(kinds Kinds, listed, subject string) bool {
	return slices.ContainsFunc(kinds.ListedAs(listed), func(k Kind) bool {
		_, ok := k.SubjectOf(k.Key(subject))
		return ok
	})
}
