package refund_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/adapters/dynamo"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/eventstore"
	"github.com/bikerental/bikerental/internal/ops/refund"
)

func TestMain(m *testing.M) { emulatortest.Main(m) }

// TestListsWhatIsStillOwedOldestFirst writes four refunds owed, one of them
// refunded by the provider since, one made by hand, and one of money the provider
// took in another amount and currency than the payment's, among other events, to
// a table in the emulator; then a rental that owes two (its own payment's and one
// on another provider payment) and one whose money another provider payment took
// and that was made by hand, and a refund owed again after the provider's refund
// failed: each refund is listed on its own while owed.
func TestListsWhatIsStillOwedOldestFirst(t *testing.T) {
	ctx := context.Background()
	client, table := emulatortest.EventsTable(t)
	store := dynamo.New(client, table)
	base := time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)
	put := func(ref string, at time.Time, events ...payment.Event) {
		t.Helper()
		var out []eventstore.Event
		for i, e := range events {
			data, _ := json.Marshal(e)
			out = append(out, eventstore.Event{ID: ref + "-" + e.EventType(), Type: e.EventType(), Data: data, RecordedAt: at.Add(time.Duration(i) * time.Second)})
		}
		if _, err := store.Append(ctx, payment.StreamID(ref), 0, out...); err != nil {
			t.Fatal(err)
		}
	}
	late, early, paid := payment.ReferenceFor("b1_AAAAAAAAAAAAAAAAAAAAA1"), payment.ReferenceFor("b2_AAAAAAAAAAAAAAAAAAAAA2"), payment.ReferenceFor("b3_AAAAAAAAAAAAAAAAAAAAA3")
	owed := func(ref string) []payment.Event {
		return []payment.Event{
			payment.PaymentPrepared{Reference: ref, PaymentID: "pay-" + ref, Amount: 1500, Currency: "EUR"},
			payment.PaymentCancelled{Reference: ref, PaymentID: "pay-" + ref},
			payment.PaymentSucceededAfterCancellation{Reference: ref, PaymentID: "pay-" + ref, Amount: 1500, Currency: "EUR"},
			payment.RefundOwed{Reference: ref, PaymentID: "pay-" + ref, Amount: 1500, Currency: "EUR"},
		}
	}
	// The provider took another amount, in another currency, than the payment's:
	// what is owed is what it took.
	lateOwed := owed(late)
	lateOwed[2] = payment.PaymentSucceededAfterCancellation{Reference: late, PaymentID: "pay-" + late, Amount: 150000, Currency: "USD"}
	lateOwed[3] = payment.RefundOwed{Reference: late, PaymentID: "pay-" + late, Amount: 150000, Currency: "USD", Reason: "Stripe refused the refund (charge_disputed)"}
	put(late, base.Add(time.Hour), lateOwed...)
	put(early, base, owed(early)...)
	put(paid, base, append(owed(paid), payment.PaymentRefunded{Reference: paid, PaymentID: "pay-" + paid})...)
	byHand := payment.ReferenceFor("b5_AAAAAAAAAAAAAAAAAAAAA5")
	put(byHand, base, append(owed(byHand), payment.RefundMadeByHand{Reference: byHand, PaymentID: "pay-" + byHand, Amount: 1500, Currency: "EUR",
		OperatorReference: "bank-transfer-1", RecordedBy: "op-1"})...)
	put(payment.ReferenceFor("b4_AAAAAAAAAAAAAAAAAAAAA4"), base, payment.PaymentPrepared{Reference: "rp_b4_AAAAAAAAAAAAAAAAAAAAA4", PaymentID: "p", Amount: 1, Currency: "EUR"})

	// Pages of five items, so that the scan takes several and reports each.
	var progress []int
	got, err := refund.List(ctx, pages{client, 5}, table, func(scanned int) { progress = append(progress, scanned) })
	if err != nil {
		t.Fatal(err)
	}
	// 4 + 4 + 5 + 5 + 1 events: pages of 5, 5, 5, 4, and an empty last one at most.
	if len(progress) < 4 || progress[0] != 5 || progress[1] != 10 || progress[len(progress)-1] != 19 {
		t.Errorf("progress after each page: %v, want 5, 10, ... 19", progress)
	}
	if len(got) != 2 || got[0].PaymentReference != early || got[1].PaymentReference != late {
		t.Fatalf("owed = %+v, want %s then %s", got, early, late)
	}
	if o := got[0]; o.Amount != 1500 || o.Currency != "EUR" || o.RentalID != "b2_AAAAAAAAAAAAAAAAAAAAA2" || !o.OwedSince.Equal(base.Add(3*time.Second)) || o.PaymentID != "pay-"+early {
		t.Errorf("first = %+v", o)
	}
	if o := got[1]; o.Amount != 150000 || o.Currency != "USD" {
		t.Errorf("second = %+v; want what the provider took, 150000 USD", o)
	}
	if got[0].Reason != "" || got[1].Reason != "Stripe refused the refund (charge_disputed)" {
		t.Errorf("reasons %q and %q; want none for the provider that cannot refund, the refusal for the other", got[0].Reason, got[1].Reason)
	}
	if got[0].Cause != "late-success" || got[1].Cause != "late-success" {
		t.Errorf("causes %q and %q", got[0].Cause, got[1].Cause)
	}

	// A rental that owes two; one whose money taken elsewhere was made by hand; one
	// owed again after the provider's refund failed.
	two := payment.ReferenceFor("b6_AAAAAAAAAAAAAAAAAAAAA6")
	put(two, base.Add(2*time.Hour), append(owed(two), payment.UnexpectedRefundOwed{Reference: two, PaymentID: "pi_other", Amount: 700, Currency: "USD", Reason: "charge_disputed"})...)
	madeOther := payment.ReferenceFor("b7_AAAAAAAAAAAAAAAAAAAAA7")
	put(madeOther, base, payment.PaymentPrepared{Reference: madeOther, PaymentID: "p7", Amount: 1500, Currency: "EUR"},
		payment.UnexpectedRefundOwed{Reference: madeOther, PaymentID: "pi_7"},
		payment.UnexpectedRefundMadeByHand{Reference: madeOther, PaymentID: "pi_7", Amount: 3, Currency: "EUR", OperatorReference: "bank-7", RecordedBy: "op"})
	again := payment.ReferenceFor("b8_AAAAAAAAAAAAAAAAAAAAA8")
	put(again, base.Add(3*time.Hour), append(owed(again)[:3],
		payment.RefundRequested{Reference: again, PaymentID: "pay-" + again, RefundID: "re_8", Amount: 1500, Currency: "EUR"},
		payment.PaymentRefunded{Reference: again, PaymentID: "pay-" + again},
		payment.RefundOwed{Reference: again, PaymentID: "pay-" + again, Amount: 1500, Currency: "EUR", Reason: "the bank refused", FailedRefundID: "re_8"})...)
	got, err = refund.List(ctx, pages{client, 5}, table, nil)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, o := range got {
		listed = append(listed, o.RentalID+" "+o.PaymentID+" "+o.Cause)
	}
	want := []string{"b2_AAAAAAAAAAAAAAAAAAAAA2 pay-" + early + " late-success", "b1_AAAAAAAAAAAAAAAAAAAAA1 pay-" + late + " late-success",
		"b6_AAAAAAAAAAAAAAAAAAAAA6 pay-" + two + " late-success", "b6_AAAAAAAAAAAAAAAAAAAAA6 pi_other other-payment",
		"b8_AAAAAAAAAAAAAAAAAAAAA8 pay-" + again + " late-success"}
	if !slices.Equal(listed, want) {
		t.Fatalf("owed:\n  %s\nwant\n  %s", strings.Join(listed, "\n  "), strings.Join(want, "\n  "))
	}
	if o := got[3]; o.Amount != 700 || o.Currency != "USD" || o.Reason != "charge_disputed" || o.PaymentReference != two || !o.OwedSince.Equal(base.Add(2*time.Hour+4*time.Second)) {
		t.Errorf("the refund owed on another provider payment: %+v", o)
	}
}

// pages is a Scanner whose every scan reads at most limit items.
type pages struct {
	refund.Scanner
	limit int32
}

func (p pages) Scan(ctx context.Context, in *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	in.Limit = aws.Int32(p.limit)
	return p.Scanner.Scan(ctx, in, optFns...)
}
