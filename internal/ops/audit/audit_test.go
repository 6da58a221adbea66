package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/adapters/schema"
	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
	"github.com/bikerental/bikerental/internal/app/process"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/ident"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
	"github.com/bikerental/bikerental/internal/domain/rentalpayment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/audit"
	"github.com/bikerental/bikerental/internal/ops/rebuild"
	"github.com/bikerental/bikerental/internal/testkit/rebuildtest"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

var ctx = context.Background()

// world is a table pair of its own on the emulator holding rentals in every state,
// every event delivered to the process and the projection: a quiet service.
type world struct {
	*rebuildtest.World
	t testing.TB
	// rentals names the world's rentals by what happened to them.
	rentals map[string]string
}

// Settlements that rent knows besides rebuildtest's.
const (
	outstanding = rebuildtest.Outstanding
	confirmed   = rebuildtest.Confirmed
	rejected    = rebuildtest.Rejected
	cancelled   = rebuildtest.Cancelled // by CancelRentalPayment, as the sweep does
)

func newWorld(t testing.TB) *world {
	t.Helper()
	w := &world{World: rebuildtest.NewWorld(t), t: t, rentals: map[string]string{}}
	w.rentals["confirmed"] = w.rent("confirmed", "Confirmed", confirmed)
	w.rentals["rejected"] = w.rent("rejected", "Rejected", rejected)
	w.rentals["cancelled"] = w.rent("cancelled", "Cancelled", cancelled)
	w.rentals["outstanding"] = w.rent("outstanding", "Outstanding", outstanding)
	// One bike that has been rented, returned, and rented again, twice.
	w.rentals["returned"] = w.rent("busy", "First", confirmed)
	w.bike(rental.ReturnBike{BikeID: "busy"})
	w.rentals["busy-cancelled"] = w.rent("busy", "Second", cancelled)
	w.rentals["busy-rented"] = w.rent("busy", "Third", confirmed)
	w.project()
	return w
}

// rent requests bikeID under a rental id made from suffix, delivers the request to
// the process, settles the payment as how says and delivers that too.
func (w *world) rent(bikeID, suffix string, how rebuildtest.Settlement) string {
	w.t.Helper()
	rentalID := rentalID(bikeID, suffix)
	w.bike(rental.RegisterBike{BikeID: bikeID})
	w.request(bikeID, rentalID)
	w.deliver(rental.StreamID(bikeID), "BikeRequested")
	if how == outstanding {
		return rentalID
	}
	w.settle(rentalID, how)
	w.deliver(payment.StreamID(payment.ReferenceFor(rentalID)), "")
	return rentalID
}

// rentalID returns the id of a rental of bikeID named name (at most 22 letters).
func rentalID(bikeID, name string) string {
	return rental.NewRentalID(bikeID, name+strings.Repeat("x", rental.RentalSuffixLength-len(name)))
}

func (w *world) request(bikeID, rentalID string) {
	w.t.Helper()
	w.bike(rental.RequestBike{BikeID: bikeID, Renter: "renter-" + bikeID, RentalID: rentalID}) // a renter per bike, each with one outstanding request at most
}

func (w *world) bike(c rental.Command) {
	w.t.Helper()
	if _, err := w.Commands.Bike(ctx, c, command.Meta{}); err != nil {
		w.t.Fatalf("%T: %v", c, err)
	}
}

// settle settles a rental's payment without telling the process.
func (w *world) settle(rentalID string, how rebuildtest.Settlement) {
	w.t.Helper()
	ref := payment.ReferenceFor(rentalID)
	var err error
	switch how {
	case confirmed:
		_, err = w.Commands.Payment(ctx, payment.ConfirmPayment{Reference: ref}, command.Meta{})
	case rejected:
		_, err = w.Commands.Payment(ctx, payment.RejectPayment{Reference: ref, Reason: "card declined"}, command.Meta{})
	case cancelled:
		var outcome process.Outcome
		outcome, err = w.Process.CancelRentalPayment(ctx, rentalID, command.Meta{})
		if err == nil && outcome != process.OutcomeCancelled {
			err = fmt.Errorf("cancel: %s", outcome)
		}
	default:
		err = fmt.Errorf("unknown settlement %q", how)
	}
	if err != nil {
		w.t.Fatalf("settle %s: %v", rentalID, err)
	}
}

// deliver gives the process the last record of stream, of type typ if not empty, as
// its stream consumer would.
func (w *world) deliver(stream, typ string) {
	w.t.Helper()
	records := w.Read(stream)
	for i := len(records) - 1; i >= 0; i-- {
		if typ == "" || records[i].Type == typ {
			if err := w.Process.Handle(ctx, records[i]); err != nil {
				w.t.Fatalf("deliver %s version %d: %v", stream, records[i].Version, err)
			}
			return
		}
	}
	w.t.Fatalf("no %s in %s", typ, stream)
}

// project brings the Deadlines table up to date with every payment stream.
func (w *world) project() {
	w.t.Helper()
	if _, err := rebuild.Deadlines(ctx, w.Store, w.Projection(2), nil); err != nil {
		w.t.Fatal(err)
	}
}

func (w *world) audit(quiet bool) audit.Report {
	w.t.Helper()
	source := audit.NewDynamo(w.Client, w.EventsTable)
	report, err := audit.Run(ctx, source, w.Projection(2), audit.Options{Quiet: quiet, Kinds: w.Kinds})
	if err != nil {
		w.t.Fatalf("audit: %v", err)
	}
	return report
}

// put writes an Events table item as it is, over whatever is there.
func (w *world) put(item map[string]types.AttributeValue) {
	w.t.Helper()
	if _, err := w.Client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(w.EventsTable), Item: item}); err != nil {
		w.t.Fatal(err)
	}
}

// putEvent writes an event straight into the Events table at version, bypassing the
// store's conditions.
func (w *world) putEvent(stream string, version int64, e interface{ EventType() string }) {
	w.t.Helper()
	data, err := json.Marshal(e)
	if err != nil {
		w.t.Fatal(err)
	}
	w.putRaw(stream, version, e.EventType(), data)
}

func (w *world) putRaw(stream string, version int64, typ string, data []byte) {
	w.t.Helper()
	w.put(dynamo.EncodeRecord(eventstore.Record{StreamID: stream, Version: version, Event: eventstore.Event{
		ID: ident.UUID(), Type: typ, Data: data, RecordedAt: time.Now(),
	}}))
}

// processEvent is one of the process's own events, for putEvent.
type processEvent struct {
	typ string
	v   any
}

func (e processEvent) EventType() string            { return e.typ }
func (e processEvent) MarshalJSON() ([]byte, error) { return json.Marshal(e.v) }

func requested(rentalID, bikeID string) processEvent {
	return processEvent{rentalpayment.TypeRequested, rentalpayment.RentalPaymentRequested{
		RentalID: rentalID, BikeID: bikeID, Renter: "alice", Amount: 1500, Currency: "EUR"}}
}

func completed(rentalID string, outcome rentalpayment.Completion) processEvent {
	return processEvent{rentalpayment.TypeCompleted, rentalpayment.RentalPaymentProcessCompleted{RentalID: rentalID, Outcome: outcome}}
}

// The Deadlines table's key attribute, and its index's partition and sort key
// attributes, as deadlines/dynamo defines the table.
var (
	keyAttr   = aws.ToString(deadlinetable.Definition("").KeySchema[0].AttributeName)
	shardAttr = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema[0].AttributeName)
	dueAttr   = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema[1].AttributeName)
)

// rowKey is the key of the Deadlines table's item at key.
func rowKey(key string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{keyAttr: &types.AttributeValueMemberS{Value: key}}
}

// deleteRow deletes the Deadlines table's item at key, marker and all, as no
// record would.
func (w *world) deleteRow(key string) {
	w.t.Helper()
	if _, err := w.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: aws.String(w.DeadlinesTable), Key: rowKey(key)}); err != nil {
		w.t.Fatal(err)
	}
}

// putRow makes the item at the key of kind's row about subject an outstanding row
// of that kind, in its first shard, due now, over whatever is there, as no record
// would.
func (w *world) putRow(kind, subject string) {
	w.t.Helper()
	k, _ := w.Kinds.ByName(kind)
	_, err := w.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                aws.String(w.DeadlinesTable),
		Key:                      rowKey(k.Key(subject)),
		UpdateExpression:         aws.String("SET #d = :d, #p = :p"),
		ExpressionAttributeNames: map[string]string{"#d": shardAttr, "#p": dueAttr},
		ExpressionAttributeValues: map[string]types.AttributeValue{
			":d": &types.AttributeValueMemberS{Value: kind + "#0"}, // the kind's partition of shard 0 (deadlines/dynamo)
			":p": &types.AttributeValueMemberN{Value: strconv.FormatInt(time.Now().UnixMilli(), 10)},
		},
	})
	if err != nil {
		w.t.Fatal(err)
	}
}

func processOf(rentalID string) string { return rentalpayment.StreamID(rentalID) }
func paymentOf(rentalID string) string { return payment.StreamID(payment.ReferenceFor(rentalID)) }

// found lists a report's violations as "code stream,stream", sorted.
func found(r audit.Report) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.Invariant+" "+strings.Join(v.Streams, ","))
	}
	slices.Sort(out)
	return out
}

func TestACleanWorldAuditsClean(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	for _, quiet := range []bool{true, false} {
		report := w.audit(quiet)
		if !report.OK() {
			t.Errorf("quiet=%v: violations in a clean world:\n%s", quiet, strings.Join(lines(report), "\n"))
		}
		// 4 bikes with one rental each and busy with three; a process and a payment
		// per rental; a renter per bike, with an event per rental; an outstanding
		// Deadlines table row for the outstanding rental's payment and its process,
		// and one for the return due of each rental that has its bike (an approved
		// rental's return due is its process's row, taken over).
		want := audit.Report{Quiet: quiet, Streams: 5 + 7 + 7 + 5, Records: 19 + 13 + 13 + 7, Rentals: 7, Payments: 7, DeadlineRows: 4, Violations: []audit.Violation{}}
		if got := report; fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("quiet=%v: report %+v, want %+v", quiet, got, want)
		}
	}
}

func lines(r audit.Report) []string {
	var out []string
	for _, v := range r.Violations {
		out = append(out, v.String())
	}
	return out
}

func TestEachBrokenInvariantIsReported(t *testing.T) {
	cases := []struct {
		name   string
		quiet  bool
		damage func(w *world)
		want   func(w *world) []string
		detail string // in some violation's Detail
	}{
		{
			name:  "a version gap, and a stream without version 1",
			quiet: true,
			damage: func(w *world) {
				w.putEvent(rental.StreamID("outstanding"), 4, rental.BikeRegistered{BikeID: "outstanding"})
				w.putEvent(rental.StreamID("ghost"), 2, rental.BikeRegistered{BikeID: "ghost"})
			},
			want: func(w *world) []string {
				return []string{"version-gap bike-ghost", "version-gap bike-outstanding"}
			},
			detail: "missing version 1",
		},
		{
			name:  "a process started twice",
			quiet: true,
			damage: func(w *world) {
				id := w.rentals["outstanding"]
				w.putEvent(processOf(id), 2, requested(id, "outstanding"))
			},
			want: func(w *world) []string {
				return []string{"process-started-twice " + processOf(w.rentals["outstanding"])}
			},
		},
		{
			name:  "a process completed twice",
			quiet: true,
			damage: func(w *world) {
				id := w.rentals["confirmed"]
				w.putEvent(processOf(id), 3, completed(id, rentalpayment.CompletedApproved))
			},
			want: func(w *world) []string {
				return []string{"process-completed-twice " + processOf(w.rentals["confirmed"])}
			},
		},
		{
			name:  "a payment confirmed after it was cancelled",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["cancelled"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentConfirmed{Reference: ref})
			},
			want: func(w *world) []string {
				return []string{"payment-settled-twice " + paymentOf(w.rentals["cancelled"])}
			},
			detail: "PaymentCancelled at version 2, PaymentConfirmed at version 3",
		},
		{
			name:  "money taken after the cancellation and never refunded",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["cancelled"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
				// The same late success with its refund owed is no violation.
				other := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(other), 3, payment.PaymentSucceededAfterCancellation{Reference: other, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(other), 4, payment.RefundOwed{Reference: other, Amount: 1500, Currency: "EUR"})
				w.project() // the refund owed's row, which operators list
			},
			want: func(w *world) []string {
				return []string{"money-kept " + paymentOf(w.rentals["cancelled"])}
			},
			detail: "no refund or refund owed",
		},
		{
			name:  "a refund owed, made by hand, is money returned and off the to-do list",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 4, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 5, payment.RefundMadeByHand{Reference: ref, Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"})
				w.project()
			},
			want: func(w *world) []string { return nil },
		},
		{
			name:   "a refund the provider reported made that failed, then made by hand, is money returned once, and its row is back then off the to-do list",
			quiet:  true,
			damage: func(w *world) { refundReportedMadeThatFailed(w, true) },
			want:   func(w *world) []string { return nil },
		},
		{
			name:   "a refund the provider reported made that failed is on the to-do list until made",
			quiet:  true,
			damage: func(w *world) { refundReportedMadeThatFailed(w, false) },
			want:   func(w *world) []string { return nil },
		},
		{
			name:  "a refund made by hand that the service would have refused",
			quiet: true,
			damage: func(w *world) {
				byHand := func(ref string, amount int64, currency string) payment.RefundMadeByHand {
					return payment.RefundMadeByHand{Reference: ref, Amount: amount, Currency: currency, OperatorReference: "bank-1", RecordedBy: "ann"}
				}
				// Another amount than owed.
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 4, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 5, byHand(ref, 150, "EUR"))
				// Owed by nothing: the money was never taken late.
				other := payment.ReferenceFor(w.rentals["cancelled"])
				w.putEvent(payment.StreamID(other), 3, byHand(other, 1500, "EUR"))
				w.project()
			},
			want: func(w *world) []string {
				return []string{"refund-by-hand-unfounded " + paymentOf(w.rentals["rejected"]), "refund-by-hand-unfounded " + paymentOf(w.rentals["cancelled"])}
			},
			detail: "for 150 EUR where 1500 EUR was owed",
		},
		{
			name:  "a refund recorded twice",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 4, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 5, payment.RefundMadeByHand{Reference: ref, Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"})
				w.putEvent(payment.StreamID(ref), 6, payment.PaymentRefunded{Reference: ref})
				w.project()
			},
			want: func(w *world) []string {
				return []string{"refund-by-hand-unfounded " + paymentOf(w.rentals["rejected"])}
			},
			detail: "PaymentRefunded at version 6 after RefundMadeByHand at version 5: the refund was recorded twice",
		},
		{
			name:  "a refund the provider reported made failed, was made by hand, and then the provider refunded again",
			quiet: true,
			damage: func(w *world) {
				refundReportedMadeThatFailed(w, true)
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 8, payment.PaymentRefunded{Reference: ref, ProviderEventID: "evt_dashboard", ReportedAt: time.Unix(1780480800, 0).UTC()})
				w.project()
			},
			want: func(w *world) []string {
				return []string{"refund-by-hand-unfounded " + paymentOf(w.rentals["rejected"])}
			},
			detail: "PaymentRefunded at version 8 after RefundMadeByHand at version 7: the refund was recorded twice",
		},
		{
			name:  "a refund owed for another amount or currency than the provider took",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 150000, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 4, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR"})
				other := payment.ReferenceFor(w.rentals["cancelled"])
				w.putEvent(payment.StreamID(other), 3, payment.PaymentSucceededAfterCancellation{Reference: other, Amount: 1500, Currency: "USD"})
				w.putEvent(payment.StreamID(other), 4, payment.RefundOwed{Reference: other, Amount: 1500, Currency: "EUR"})
				w.project()
			},
			want: func(w *world) []string {
				return []string{"money-kept " + paymentOf(w.rentals["cancelled"]), "money-kept " + paymentOf(w.rentals["rejected"])}
			},
			detail: "RefundOwed at version 4 for 1500 EUR where the provider took 150000 EUR",
		},
		{
			name:  "what the provider took, owed and made by hand for it, is money returned",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 150000, Currency: "USD"})
				w.putEvent(payment.StreamID(ref), 4, payment.RefundOwed{Reference: ref, Amount: 150000, Currency: "USD"})
				w.putEvent(payment.StreamID(ref), 5, payment.RefundMadeByHand{Reference: ref, Amount: 150000, Currency: "USD", OperatorReference: "bank-1", RecordedBy: "ann"})
				w.project()
			},
			want: func(w *world) []string { return nil },
		},
		{
			name:  "a refund owed that the to-do list does not hold",
			quiet: true,
			damage: func(w *world) {
				ref := payment.ReferenceFor(w.rentals["rejected"])
				w.putEvent(payment.StreamID(ref), 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
				w.putEvent(payment.StreamID(ref), 4, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR"})
				// and never projected
			},
			want: func(w *world) []string {
				return []string{"deadline-missing " + paymentOf(w.rentals["rejected"])}
			},
			detail: "operators would never see it listed",
		},
		{
			name:  "money taken on another provider payment and never refunded",
			quiet: true,
			damage: func(w *world) {
				mismatched := func(ref, eventID string) command.ProviderEventMismatched {
					return command.ProviderEventMismatched{Provider: "stripe", EventID: eventID, Kind: payment.ProviderSucceeded, Reference: ref,
						PaymentID: "pi_other", Amount: 1, Currency: "USD", Fields: []string{"paymentId", "amount", "currency"}, RefundDue: true}
				}
				ref := payment.ReferenceFor(w.rentals["outstanding"])
				w.putEvent(command.ReceiptStreamID("stripe", "evt_kept"), 1, mismatched(ref, "evt_kept"))
				// The same with its refund recorded, and one with nothing to refund, are no violation.
				w.putEvent(command.ReceiptStreamID("stripe", "evt_refunded"), 1, mismatched(ref, "evt_refunded"))
				w.putEvent(command.ReceiptStreamID("stripe", "evt_refunded"), 2, command.MismatchRefundRequested{Reference: ref, PaymentID: "pi_other", RefundID: "re_1"})
				nothing := mismatched(ref, "evt_amount")
				nothing.RefundDue = false
				w.putEvent(command.ReceiptStreamID("stripe", "evt_amount"), 1, nothing)
			},
			want: func(w *world) []string {
				return []string{"money-kept " + command.ReceiptStreamID("stripe", "evt_kept")}
			},
			detail: "not the one recorded",
		},
		{
			name:  "money another provider payment took, owed and recorded on its payment, is on the to-do list and no violation",
			quiet: true,
			damage: func(w *world) {
				owedOnOther(w, w.rentals["outstanding"], "evt_owed", true)
				w.project()
			},
			want: func(w *world) []string { return nil },
		},
		{
			name:  "money another provider payment took, owed at its event's receipt but recorded on no payment",
			quiet: true,
			damage: func(w *world) {
				owedOnOther(w, w.rentals["outstanding"], "evt_unrecorded", false)
				w.project()
			},
			want: func(w *world) []string {
				return []string{"money-kept " + paymentOf(w.rentals["outstanding"]) + "," + command.ReceiptStreamID("stripe", "evt_unrecorded")}
			},
			detail: "no list shows it, and nobody pays it back; deliver it to the process again: rentalctl repair --stream " + command.ReceiptStreamID("stripe", "evt_unrecorded"),
		},
		{
			name:  "a refund owed on another provider payment that the to-do list does not hold",
			quiet: true,
			damage: func(w *world) {
				owedOnOther(w, w.rentals["outstanding"], "evt_unprojected", true) // and never projected
			},
			want: func(w *world) []string {
				return []string{"deadline-missing " + paymentOf(w.rentals["outstanding"])}
			},
			detail: "operators would never see it listed",
		},
		{
			name:  "a refund owed on another provider payment made by hand as the service would have refused",
			quiet: true,
			damage: func(w *world) {
				id := w.rentals["outstanding"]
				ref := payment.ReferenceFor(id)
				owedOnOther(w, id, "evt_made", true)
				made := payment.UnexpectedRefundMadeByHand{Reference: ref, PaymentID: "pi_other", Amount: 2, Currency: "USD", OperatorReference: "bank-1", RecordedBy: "ann"}
				w.putEvent(paymentOf(id), 3, made) // another amount
				w.putEvent(paymentOf(id), 4, made) // twice
				made.PaymentID = "pi_nothing"
				w.putEvent(paymentOf(id), 5, made) // owed by nothing
				w.project()
			},
			want: func(w *world) []string {
				id := w.rentals["outstanding"]
				return []string{"refund-by-hand-unfounded " + paymentOf(id), "refund-by-hand-unfounded " + paymentOf(id), "refund-by-hand-unfounded " + paymentOf(id)}
			},
			detail: `for 2 USD on provider payment "pi_other" where 1 USD was owed`,
		},
		{
			name:  "a bike requested by another rental while one is requested",
			quiet: false, // quiet, the intruder's process would be missing too
			damage: func(w *world) {
				intruder := rentalID("outstanding", "Intruder")
				w.putEvent(rental.StreamID("outstanding"), 3, rental.BikeRequested{BikeID: "outstanding", Renter: "bob", RentalID: intruder})
			},
			want: func(w *world) []string {
				return []string{"bike-double-booked bike-outstanding"}
			},
			detail: "while rental " + rentalID("outstanding", "Outstanding") + " holds it",
		},
		{
			name:  "a bike requested by another rental while one is rented",
			quiet: false,
			damage: func(w *world) {
				w.putEvent(rental.StreamID("busy"), 9, rental.BikeRequested{BikeID: "busy", Renter: "bob", RentalID: rentalID("busy", "Intruder")})
			},
			want: func(w *world) []string {
				return []string{"bike-double-booked bike-busy"}
			},
			detail: "version 9 requests the bike for rental " + rentalID("busy", "Intruder"),
		},
		{
			name:  "a payment row missing, one stale, one for an unknown payment",
			quiet: true,
			damage: func(w *world) {
				w.deleteRow(payment.ReferenceFor(w.rentals["outstanding"]))
				for _, id := range []string{w.rentals["confirmed"], rentalID("nobike", "Unknown")} {
					w.putRow(deadlinekinds.Payment, id)
				}
			},
			want: func(w *world) []string {
				return []string{
					"deadline-missing " + paymentOf(w.rentals["outstanding"]),
					"deadline-stale " + paymentOf(rentalID("nobike", "Unknown")),
					"deadline-stale " + paymentOf(w.rentals["confirmed"]),
				}
			},
			detail: "the sweep would never give up on it",
		},
		{
			name:  "an open-process row missing, and one stale",
			quiet: true,
			damage: func(w *world) {
				w.deleteRow(processOf(w.rentals["outstanding"]))
				// The rejected rental's process completed: its row is a marker (the
				// confirmed one's is its return due since its approval).
				w.putRow(deadlinekinds.Stuck, w.rentals["rejected"])
			},
			want: func(w *world) []string {
				return []string{"open-missing bike-outstanding", "open-stale " + processOf(w.rentals["rejected"])}
			},
			detail: "the sweep would not notice if it stayed stuck",
		},
		{
			name:  "a return-due row missing, and one stale",
			quiet: true,
			damage: func(w *world) {
				w.deleteRow(deadlinekinds.ReturnPrefix + w.rentals["confirmed"])
				w.putRow(deadlinekinds.Return, rentalID("nobike", "Unknown"))
			},
			want: func(w *world) []string {
				return []string{"deadline-missing bike-confirmed", "deadline-stale "}
			},
			detail: "the sweep would never notice it overdue",
		},
		{
			name:  "a return flagged overdue kept in its lane, and one whose row is missing",
			quiet: true,
			damage: func(w *world) {
				for _, bike := range []string{"confirmed", "busy"} {
					id := w.rentals[bike]
					if bike == "busy" {
						id = w.rentals["busy-rented"]
					}
					recs := w.Read(rental.StreamID(bike))
					approved := time.Now().Add(-3 * time.Hour)
					w.putEvent(rental.StreamID(bike), int64(len(recs))+1, rental.ReturnOverdue{
						BikeID: bike, Renter: "renter-" + bike, RentalID: id, ApprovedAt: approved, DueAt: approved.Add(2 * time.Hour), FlaggedAt: time.Now(),
					})
				}
				w.project() // the flags take the rows over into the overdue returns' partitions
				w.deleteRow(deadlinekinds.ReturnPrefix + w.rentals["busy-rented"])
			},
			want: func(w *world) []string {
				return []string{"deadline-missing bike-busy"}
			},
			detail: "operators would never see it listed",
		},
		{
			name:   "drift younger than the grace period, not quiet",
			quiet:  false,
			damage: func(w *world) { w.deleteRow(payment.ReferenceFor(w.rentals["outstanding"])) },
			want:   func(w *world) []string { return nil },
		},
		{
			name:  "a process never completed",
			quiet: true,
			damage: func(w *world) {
				w.settle(w.rentals["outstanding"], confirmed) // and never delivered
				w.project()
			},
			want: func(w *world) []string {
				id := w.rentals["outstanding"]
				return []string{"process-not-completed " + paymentOf(id) + "," + processOf(id)}
			},
		},
		{
			name:  "a process never started",
			quiet: true,
			damage: func(w *world) {
				w.request("rejected", rentalID("rejected", "Undelivered")) // and never delivered
			},
			want: func(w *world) []string {
				return []string{"process-not-started bike-rejected," + processOf(rentalID("rejected", "Undelivered")), "open-missing bike-rejected"}
			},
		},
		{
			name:  "a process that completed otherwise than its payment settled",
			quiet: true,
			damage: func(w *world) {
				id := w.rentals["confirmed"]
				w.putEvent(processOf(id), 2, completed(id, rentalpayment.CompletedRejected)) // over the real one
			},
			want: func(w *world) []string {
				id := w.rentals["confirmed"]
				return []string{
					"bike-not-told bike-confirmed," + processOf(id),
					"process-outcome-mismatch " + paymentOf(id) + "," + processOf(id),
				}
			},
			detail: "its bike should show RequestRejected, but it shows the rental approved",
		},
		{
			name:  "a bike never told",
			quiet: true,
			damage: func(w *world) {
				id := w.rentals["outstanding"]
				w.settle(id, confirmed)
				w.project()
				w.putEvent(processOf(id), 2, completed(id, rentalpayment.CompletedApproved))
			},
			want: func(w *world) []string {
				// and the completion, written by hand, never reached the projection
				return []string{"bike-not-told bike-outstanding," + processOf(w.rentals["outstanding"]), "open-stale " + processOf(w.rentals["outstanding"])}
			},
			detail: "shows the rental requested",
		},
		{
			name:  "corrupt records",
			quiet: true,
			damage: func(w *world) {
				item := dynamo.EncodeRecord(eventstore.Record{StreamID: "bike-confirmed", Version: 4, Event: eventstore.Event{
					ID: ident.UUID(), Type: "BikeRegistered", Data: []byte(`{}`), RecordedAt: time.Now()}})
				delete(item, schema.EventsType)
				w.put(item)
				w.putRaw("bike-confirmed", 5, "BikeRequested", []byte(`{not json`))
				w.putRaw("bike-confirmed", 6, "BikeExploded", []byte(`{}`))
			},
			want: func(w *world) []string {
				return []string{"corrupt-record bike-confirmed", "corrupt-record bike-confirmed", "corrupt-record bike-confirmed"}
			},
			detail: "version 4: eventstore: stored record is corrupt: missing type",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			w := newWorld(t)
			c.damage(w)
			report := w.audit(c.quiet)
			want := c.want(w)
			slices.Sort(want)
			if got := found(report); !slices.Equal(got, want) {
				t.Errorf("found\n  %s\nwant\n  %s\nreport:\n%s", strings.Join(got, "\n  "), strings.Join(want, "\n  "), strings.Join(lines(report), "\n"))
			}
			if c.detail != "" && !slices.ContainsFunc(report.Violations, func(v audit.Violation) bool { return strings.Contains(v.Detail, c.detail) }) {
				t.Errorf("no violation says %q:\n%s", c.detail, strings.Join(lines(report), "\n"))
			}
			if report.OK() != (len(want) == 0) {
				t.Errorf("OK() = %v with %d violations", report.OK(), len(report.Violations))
			}
		})
	}
}

// refundReportedMadeThatFailed writes the rejected rental's late success, whose
// refund the provider accepted, reported made and then failed (the refund owed
// anew), and, with byHand, the refund an operator then made by hand; and projects.
func refundReportedMadeThatFailed(w *world, byHand bool) {
	ref := payment.ReferenceFor(w.rentals["rejected"])
	stream := payment.StreamID(ref)
	w.putEvent(stream, 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
	w.putEvent(stream, 4, payment.RefundRequested{Reference: ref, RefundID: "re_1", Amount: 1500, Currency: "EUR"})
	w.putEvent(stream, 5, payment.PaymentRefunded{Reference: ref})
	w.putEvent(stream, 6, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR", Reason: "the bank refused", FailedRefundID: "re_1"})
	if byHand {
		w.putEvent(stream, 7, payment.RefundMadeByHand{Reference: ref, Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"})
	}
	w.project()
}

// owedOnOther writes, for rentalID, a mismatched success of eventID that reported
// 1 USD taken on the provider payment pi_other, which Stripe refused to refund
// (MismatchRefundOwed in the event's receipt stream), and, with recorded, the
// refund owed the process records on the payment (UnexpectedRefundOwed), as
// version 2 of the payment's stream (the outstanding rental's).
func owedOnOther(w *world, rentalID, eventID string, recorded bool) {
	ref := payment.ReferenceFor(rentalID)
	receipt := command.ReceiptStreamID("stripe", eventID)
	w.putEvent(receipt, 1, command.ProviderEventMismatched{Provider: "stripe", EventID: eventID, Kind: payment.ProviderSucceeded, Reference: ref,
		PaymentID: "pi_other", Amount: 1, Currency: "USD", Fields: []string{"paymentId", "amount", "currency"}, RefundDue: true})
	w.putEvent(receipt, 2, command.MismatchRefundOwed{Reference: ref, PaymentID: "pi_other", Amount: 1, Currency: "USD", Reason: "charge_disputed"})
	if recorded {
		w.putEvent(paymentOf(rentalID), 2, payment.UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_other", Amount: 1, Currency: "USD", Reason: "charge_disputed"})
	}
}

// TestEachRefundOwedIsCountedUntilMade: the audit counts every refund owed that
// nothing settled, a rental's own and one on another provider payment alike, each
// on its own, until each is made by hand; a missing row names the rental to
// repair, never the refund's row subject.
func TestEachRefundOwedIsCountedUntilMade(t *testing.T) {
	t.Parallel()
	w := newWorld(t)
	id := w.rentals["rejected"]
	ref := payment.ReferenceFor(id)
	stream := paymentOf(id)
	w.putEvent(stream, 3, payment.PaymentSucceededAfterCancellation{Reference: ref, Amount: 1500, Currency: "EUR"})
	w.putEvent(stream, 4, payment.RefundOwed{Reference: ref, Amount: 1500, Currency: "EUR"})
	receipt := command.ReceiptStreamID("stripe", "evt_other")
	w.putEvent(receipt, 1, command.ProviderEventMismatched{Provider: "stripe", EventID: "evt_other", Kind: payment.ProviderSucceeded, Reference: ref,
		PaymentID: "pi_other", Amount: 700, Currency: "EUR", Fields: []string{"paymentId", "amount"}, RefundDue: true})
	w.putEvent(receipt, 2, command.MismatchRefundOwed{Reference: ref, PaymentID: "pi_other", Amount: 700, Currency: "EUR"})
	w.putEvent(stream, 5, payment.UnexpectedRefundOwed{Reference: ref, PaymentID: "pi_other", Amount: 700, Currency: "EUR"})

	r := w.audit(true)
	if len(r.Violations) != 2 || r.RefundsOwed != 2 {
		t.Fatalf("two refunds owed, neither projected: %d owed, %v; want two deadline-missing", r.RefundsOwed, lines(r))
	}
	for _, v := range r.Violations {
		if v.Invariant != audit.DeadlineMissing || v.Rental != id {
			t.Errorf("%v; want deadline-missing naming rental %s to repair", v, id)
		}
	}
	w.project()
	if r := w.audit(true); !r.OK() || r.RefundsOwed != 2 {
		t.Fatalf("two refunds owed and listed: %d owed, %v", r.RefundsOwed, lines(r))
	}
	w.putEvent(stream, 6, payment.UnexpectedRefundMadeByHand{Reference: ref, PaymentID: "pi_other", Amount: 700, Currency: "EUR", OperatorReference: "bank-2", RecordedBy: "ann"})
	if r := w.audit(true); r.RefundsOwed != 1 || len(r.Violations) != 1 || r.Violations[0].Invariant != audit.DeadlineStale {
		t.Fatalf("the other made by hand, its row not yet off: %d owed, %v", r.RefundsOwed, lines(r))
	}
	w.project()
	if r := w.audit(true); !r.OK() || r.RefundsOwed != 1 {
		t.Fatalf("the other made by hand: %d owed, %v", r.RefundsOwed, lines(r))
	}
	w.putEvent(stream, 7, payment.RefundMadeByHand{Reference: ref, Amount: 1500, Currency: "EUR", OperatorReference: "bank-1", RecordedBy: "ann"})
	w.project()
	if r := w.audit(true); !r.OK() || r.RefundsOwed != 0 {
		t.Fatalf("both made by hand: %d owed, %v", r.RefundsOwed, lines(r))
	}
}
