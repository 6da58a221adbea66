// Package deadline is the to-do list's machinery, which knows no domain: kinds of
// deadline declared once (Kind: which records open and settle a row, when it falls
// due, what is sent for it or that operators work it off by hand), the Index of
// their rows (each kind's in a lane of its own, ordered by due time, beside the
// lanes of the cancellations owed to the provider and of the parked stream
// records), the Sweeper that reads what is due and sends ordinary commands, the
// Lister operators read, and what starts a sweep (Trigger). The service's kinds
// are declared in package deadlinekinds; its Index is the Deadlines table
// (package pendingtable), and memindex one in memory for tests
// (docs/decisions/0020-deadline-kinds.md, docs/decisions/0026-a-deadlines-table.md).
package deadline
