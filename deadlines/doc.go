// Package deadlines keeps a to-do list projected from events: a row opened by one
// record, due at that record's own time plus a duration, taken out by the records
// that settle it, and found through an index by a sweep that sends an ordinary
// command for each overdue row, which its receiver may decline. Nothing is
// scheduled per row, so nothing has to be unscheduled, and anyone can ask what is
// due (List).
//
// A service declares its kinds of deadline (Kind: its name, After, which records
// open and settle a row, Changes, and what is sent when it is overdue, Work) and
// checks them together (NewKinds). Its projector applies every record to a
// Projection (package memory for tests, package dynamo for the DynamoDB table);
// its sweep (Sweeper) reads each swept kind's overdue rows from the Index and sends
// their commands. The sweep only reads and sends: rows change only by records, so
// the list cannot drift from the events. What follows a sent command is declared
// on the kind: the records its receiver writes settle the row (Changes) or put it
// off (a later opening of an Ordered kind), and for a receiver that writes nothing
// a Backoff spaces the sends.
//
// This package needs only the standard library. Package awslambda holds the
// Lambda handlers (a DynamoDB stream batch, a sweep), package schedules the
// optional precise one-time schedules, and package deadlinestest the contract
// every Index keeps.
package deadlines
