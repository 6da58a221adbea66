// Package deadline is the to-do list's machinery, which knows no domain.
//
// It holds the kinds of deadline, declared once (Kind: what opens and settles a
// row, Changes; when it falls due, After; what is done once it is overdue, Work:
// a Command the sweep sends, Send, or operators' work by hand, ByHand), checked
// together (NewKinds); the Index of their rows, each kind's in a lane of its own
// of write-sharded partitions ordered by due time (beside the lanes of the
// sweep's other parts, OwedLane and ParkedLane); the Sweeper, which reads the
// overdue rows of every swept kind and sends each its kind's command (and
// SweepOne, for one row whose own schedule fired); the Lister operators read; the
// Policy of the payment timeout and the stuck grace; and what starts a sweep
// (Trigger).
//
// A row goes from an event to a command so: the projector gives each record to
// every kind's Changes; one that opens a row writes it into the kind's lane,
// stamped with its due time (the record's own time plus After), and one that
// settles it takes it out. Each sweep queries every shard of each swept kind's
// lane for the rows due before its now, and calls the kind's Command.Send for
// each, whose receiver may act, decline or find nothing to do; the row leaves the
// lane when the settling event the command caused reaches the projector.
//
// The service's kinds and commands are declared in package deadlinekinds; the
// owed cancellations and the parked records are the parts of packages owed and
// parked; package sweep runs the three together and reports one summary. The
// service's Index is the Deadlines table (package deadlinetable), and memindex is
// one in memory for tests (docs/decisions/0020-deadline-kinds.md,
// docs/decisions/0026-a-deadlines-table.md, docs/decisions/0030-a-small-machinery.md).
package deadline
