package deadline_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/app/deadline/memindex"
	"github.com/bikerental/bikerental/internal/app/sweep"
	"github.com/bikerental/bikerental/internal/eventstore"
)

// TestEachKindSweepsWithinItsShareOfTheTime: a kind whose receiver hangs uses up its
// share of the invocation's time, not the others': the next kind's rows are still
// sent their command in the same sweep.
func TestEachKindSweepsWithinItsShareOfTheTime(t *testing.T) {
	all := indextest.TestKinds.All()
	hanging, quick := all[0], all[1] // loans and watches, declared in the contract alone
	hanging.Work = deadline.Send{Command: hangs{}}
	q := &noting{}
	quick.Work = deadline.Send{Command: q}
	kinds := deadline.MustKinds(hanging, quick)
	m := memindex.NewWith(1, kinds)
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for _, r := range []eventstore.Record{
		{StreamID: "things-a", Version: 1, Event: eventstore.Event{ID: "1", Type: "Lent", Data: []byte("subject:a"), RecordedAt: t0}},
		{StreamID: "things-w", Version: 1, Event: eventstore.Event{ID: "2", Type: "Watched", Data: []byte("subject:w"), RecordedAt: t0}},
	} {
		if err := m.Apply(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	budget, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	s := &sweep.Sweep{Deadlines: &deadline.Sweeper{Index: m, Kinds: kinds}, Margin: time.Second, Logger: slog.New(slog.DiscardHandler)}
	sum, err := s.Sweep(budget, t0.Add(48*time.Hour))
	loans, _ := sum.Kind("loan")
	watches, _ := sum.Kind("watch")
	if err != nil || loans.Found != 1 || loans.Failed != 1 || watches.Found != 1 || watches.Acted != 1 || len(q.sent) != 1 || q.sent[0] != "w" {
		t.Errorf("summary %+v, %v; sent %v: want the hanging kind's command failed at the end of its share, the other's sent", sum, err, q.sent)
	}
}

// hangs is a command whose receiver never answers.
type hangs struct{}

func (hangs) Send(ctx context.Context, _ deadline.Row, _ string) (deadline.Outcome, string, error) {
	<-ctx.Done()
	return "", "", context.Cause(ctx)
}
func (hangs) OneAtATime() bool { return false }

// noting is a command that notes the subjects it is sent for, one at a time.
type noting struct{ sent []string }

func (n *noting) Send(_ context.Context, r deadline.Row, _ string) (deadline.Outcome, string, error) {
	n.sent = append(n.sent, r.Subject)
	return deadline.Acted, "", nil
}
func (*noting) OneAtATime() bool { return true }
