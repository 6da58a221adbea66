package deadline_test

import (
	"context"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadline/indextest"
	"github.com/bikerental/bikerental/internal/app/deadline/memindex"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
)

func TestMemoryKeepsTheIndexContract(t *testing.T) {
	indextest.Run(t, func(*testing.T) indextest.Subject { return newServiceMemory(4) })
}

func TestMemoryKeepsTheContractOfAnyKind(t *testing.T) {
	indextest.RunKinds(t, func(_ *testing.T, kinds deadline.Kinds) indextest.KindSubject { return memindex.NewWith(4, kinds) })
}

// serviceMemory is the in-memory index over the service's kinds, with the
// listings the Deadlines table offers in the payment-due's and the process-stuck's
// shapes (deadlinekinds.Pending, Open, Backlog), read through the index alone:
// memindex knows no kind of the service.
type serviceMemory struct {
	*memindex.Memory
	kinds deadline.Kinds
}

func newServiceMemory(shards int) *serviceMemory {
	kinds := deadlinekinds.MustDeclare(deadline.Policy{}, deadlinekinds.Receivers{})
	return &serviceMemory{Memory: memindex.NewWith(shards, kinds), kinds: kinds}
}

func (m *serviceMemory) kind(name string) deadline.Kind {
	k, _ := m.kinds.ByName(name)
	return k
}

func (m *serviceMemory) OverduePages(ctx context.Context, shard int, cutoff time.Time, fn func([]deadlinekinds.Pending) bool) (int, error) {
	k := m.kind(deadlinekinds.Payment)
	due := time.Time{}
	if !cutoff.IsZero() {
		due = k.DueAt(cutoff)
	}
	return m.LanePages(ctx, k.Lane(), shard, due, func(rows []deadline.Row) bool {
		page := make([]deadlinekinds.Pending, len(rows))
		for i, r := range rows {
			page[i] = deadlinekinds.Pending{Reference: k.Key(r.Subject), RentalID: r.Subject, PreparedAt: r.Since}
		}
		return fn(page)
	})
}

func (m *serviceMemory) Get(ctx context.Context, reference string) (deadlinekinds.Pending, bool, error) {
	k := m.kind(deadlinekinds.Payment)
	subject, ok := k.SubjectOf(reference)
	if !ok {
		return deadlinekinds.Pending{}, false, nil
	}
	row, ok, err := m.Row(ctx, k, subject)
	if !ok || err != nil {
		return deadlinekinds.Pending{}, false, err
	}
	return deadlinekinds.Pending{Reference: reference, RentalID: subject, PreparedAt: row.Since}, true, nil
}

func (m *serviceMemory) OpenBefore(ctx context.Context, cutoff time.Time) ([]deadlinekinds.Open, int, error) {
	k := m.kind(deadlinekinds.Stuck)
	var out []deadlinekinds.Open
	read := 0
	for s := range m.Shards() {
		n, err := m.LanePages(ctx, k.Lane(), s, k.DueAt(cutoff), func(rows []deadline.Row) bool {
			for _, r := range rows {
				out = append(out, deadlinekinds.Open{RentalID: r.Subject, RequestedAt: r.Since})
			}
			return true
		})
		if read += n; err != nil {
			return nil, read, err
		}
	}
	deadlinekinds.SortOpen(out)
	return out, read, nil
}

func (m *serviceMemory) Backlog(ctx context.Context, cutoff time.Time) (deadlinekinds.Backlog, int, error) {
	open, n, err := m.OpenBefore(ctx, cutoff)
	if err != nil {
		return deadlinekinds.Backlog{}, n, err
	}
	owed, k, _ := m.OwedCancellations(ctx)
	parked := m.ParkedRecords()
	return deadlinekinds.Backlog{Open: open, Owed: owed, Parked: parked}, n + k + len(parked), nil
}
