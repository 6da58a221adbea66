package owed_test

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/owed"
)

// lane is an owed lane in memory for the reads' unit tests (the lane's contract,
// held by indextest against the Deadlines table and memindex, is soonest due
// first, limit rows a page): it counts the items it passes on.
type lane struct {
	shards [][]owed.Cancellation
	read   int
}

func (l *lane) Shards() int { return len(l.shards) }

func (l *lane) OwedPages(_ context.Context, shard, limit int, fn func([]owed.Cancellation) bool) (int, error) {
	read := 0
	for page := range slices.Chunk(l.shards[shard], limit) {
		read += len(page)
		if !fn(page) {
			break
		}
	}
	l.read += read
	return read, nil
}

// retrier answers every retry: made, or still owed.
type retrier struct {
	mu    sync.Mutex
	owed  bool
	asked []string
}

func (r *retrier) RetryCancellation(_ context.Context, reference string, _ command.Meta) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.asked = append(r.asked, reference)
	return r.owed, nil
}

func rows(shard string, n int, due time.Time) []owed.Cancellation {
	out := make([]owed.Cancellation, n)
	for i := range out {
		out[i] = owed.Cancellation{Reference: fmt.Sprintf("%s-%04d", shard, i), OwedAt: due, Due: due}
	}
	return out
}

// TestRetriesReadEveryDueRowAndAPageOfThePutOffOnes: a shard's pages are read for
// as long as they end with a due row, so every due row is retried and at most a
// page of put-off ones is read beyond them; every row read is counted owed, the
// put-off ones left, and More says a shard held more put-off rows than were read.
func TestRetriesReadEveryDueRowAndAPageOfThePutOffOnes(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	due, later := now, now.Add(time.Hour)
	l := &lane{shards: [][]owed.Cancellation{
		append(rows("a", 2*owed.Page+3, due), rows("a-later", 5*owed.Page, later)...), // three pages of due rows, then many put off
		rows("b", 7, later), // only put off, fewer than a page
		nil,
	}}
	r := &retrier{}
	sum, err := (&owed.Retries{Rows: l, Retrier: r, Logger: slog.New(slog.DiscardHandler)}).Run(context.Background(), now, "test")
	if err != nil {
		t.Fatal(err)
	}
	if sum.Due != 2*owed.Page+3 || sum.Made != sum.Due || len(r.asked) != sum.Due || l.read != 3*owed.Page+7 || // a's three pages (the third ends put off), and b's one
		sum.ItemsRead != l.read {
		t.Errorf("%+v, %d asked, %d read: want every due row (%d) made, and %d items read", sum, len(r.asked), l.read, 2*owed.Page+3, 3*owed.Page+7)
	}
	if sum.Owed != l.read || sum.Left != sum.Owed-sum.Made || !sum.More {
		t.Errorf("%+v: want every row read counted owed (%d), the put-off ones left, and more", sum, l.read)
	}
}

// TestAPutOffCancellationIsCountedLeftAndAskedNobody: a row put off is owed and
// left, and no retry is sent for it; a row due whose retry goes unanswered is
// left too.
func TestAPutOffCancellationIsCountedLeftAndAskedNobody(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	l := &lane{shards: [][]owed.Cancellation{{{Reference: "due", Due: now}, {Reference: "off", Due: now.Add(time.Millisecond)}}}}
	r := &retrier{owed: true}
	sum, err := (&owed.Retries{Rows: l, Retrier: r, Logger: slog.New(slog.DiscardHandler)}).Run(context.Background(), now, "test")
	if err != nil || sum.Owed != 2 || sum.Due != 1 || sum.Made != 0 || sum.Left != 2 || sum.More || !slices.Equal(r.asked, []string{"due"}) {
		t.Errorf("%+v, %v, asked %v: want both owed and left, the due one asked alone", sum, err, r.asked)
	}
}
