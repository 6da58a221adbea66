package main

import (
	"context"
	"strings"
	"testing"

	"github.com/bikerental/bikerental/internal/app/command"
	"github.com/bikerental/bikerental/internal/dev/emulator/emulatortest"
	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// TestRefundMadeByHandTakesARefundOffTheList owes a refund in the world, records
// it made by hand, and sees it gone from rentalctl refunds and shown by history;
// every refusal and every bad command line changes nothing.
func TestRefundMadeByHandTakesARefundOffTheList(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	id, other := outstanding[0], outstanding[1]
	ref := payment.ReferenceFor(id)
	ctx := context.Background()
	if _, err := w.Commands.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "late-1", Kind: payment.ProviderSucceeded, Reference: ref, Unstated: payment.AllFacts, Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	if r := must(t, e, "refunds"); !strings.HasSuffix(r.stdout, "\n1 refund owed\n") {
		t.Fatalf("refunds:\n%s", r.stdout)
	}
	events := func() int {
		recs, err := w.Store.Read(ctx, payment.StreamID(ref), 0)
		if err != nil {
			t.Fatal(err)
		}
		return len(recs)
	}
	before := events()

	for _, args := range [][]string{
		{"refund-made-by-hand", id, "--amount", "1500", "--reference", "bank-1"},
		{"refund-made-by-hand", id, "--amount", "1500", "--by", "ann"},
		{"refund-made-by-hand", id, "--reference", "bank-1", "--by", "ann"},
		{"refund-made-by-hand", id, "--amount", "-1500", "--reference", "bank-1", "--by", "ann"},
		{"refund-made-by-hand", id, "--amount", "15.00", "--reference", "bank-1", "--by", "ann"},
		{"refund-made-by-hand", id, "--amount", "1500", "--reference", "bank\x1b[2J", "--by", "ann"},
		{"refund-made-by-hand", id, "--amount", "1500", "--reference", strings.Repeat("x", 101), "--by", "ann"},
		{"refund-made-by-hand", "<script>", "--amount", "1500", "--reference", "bank-1", "--by", "ann"},
		{"refund-made-by-hand", "--amount", "1500", "--reference", "bank-1", "--by", "ann"},
	} {
		wantUsage(t, e, args...)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"refund-made-by-hand", id, "--amount", "1499", "--reference", "bank-1", "--by", "ann"}, "1500 EUR is owed, not 1499"},
		{[]string{"refund-made-by-hand", other, "--amount", "1500", "--reference", "bank-1", "--by", "ann"}, payment.ErrNoRefundOwed.Error()},
		{[]string{"refund-made-by-hand", "nobike_AAAAAAAAAAAAAAAAAAAAAA", "--amount", "1500", "--reference", "bank-1", "--by", "ann"}, "rental not found"},
	} {
		r := wantStatus(t, 1, e, c.args...)
		if !strings.Contains(r.err.Error(), c.says) || r.stdout != "" {
			t.Errorf("rentalctl %q: %v, stdout %q; want it to say %q", c.args, r.err, r.stdout, c.says)
		}
	}
	if n := events(); n != before {
		t.Fatalf("refused commands wrote %d events", n-before)
	}

	r := must(t, e, "refund-made-by-hand", id, "--amount", "1500", "--reference", "<b>bank transfer 7</b>", "--by", "ann")
	if !strings.HasPrefix(r.stdout, id+": refunded-by-hand: 15.00 EUR paid back by hand under reference \"<b>bank transfer 7</b>\", recorded by \"ann\" at ") {
		t.Errorf("stdout %q", r.stdout)
	}
	r = wantStatus(t, 1, e, "refund-made-by-hand", id, "--amount", "1500", "--reference", "<b>bank transfer 7</b>", "--by", "ann", "--json")
	if !strings.Contains(r.err.Error(), payment.ErrRefundAlreadyRecorded.Error()) {
		t.Errorf("a second time: %v", r.err)
	}
	if n := events(); n != before+1 {
		t.Fatalf("the stream grew by %d events, want 1", n-before)
	}
	if r := must(t, e, "refunds"); !strings.HasSuffix(r.stdout, "\n0 refunds owed\n") {
		t.Errorf("refunds after the refund made by hand:\n%s", r.stdout)
	}
	h := must(t, e, "history", id)
	if !strings.Contains(h.stdout, "RefundMadeByHand") || !strings.Contains(h.stdout, `operatorReference="<b>bank transfer 7</b>"`) || !strings.Contains(h.stdout, "recordedBy=ann") ||
		!strings.Contains(h.stdout, "caused by rentalctl refund-made-by-hand:") {
		t.Errorf("history:\n%s", h.stdout)
	}
	if v := decode[ctl.View](t, must(t, e, "history", id, "--json")); v.Payment == nil || v.Payment.Refund != string(payment.RefundStatusMadeByHand) {
		t.Errorf("history --json: %+v", v.Payment)
	}
}

// TestRefundMadeByHandAnswersJSON: --json prints what was recorded.
func TestRefundMadeByHandAnswersJSON(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	ref := payment.ReferenceFor(outstanding[0])
	ctx := context.Background()
	for _, c := range []payment.Command{payment.CancelPayment{Reference: ref}, payment.ConfirmPayment{Reference: ref, ProviderEventID: "late"}, payment.OweRefund{Reference: ref}} {
		if _, err := w.Commands.Payment(ctx, c, command.Meta{}); err != nil {
			t.Fatal(err)
		}
	}
	got := decode[ctl.RefundMadeByHandResult](t, must(t, e, "refund-made-by-hand", "--json", "--by", "ann", "--amount", "1500", "--reference", "bank-1", outstanding[0]))
	if got.RentalID != outstanding[0] || got.PaymentReference != ref || got.Amount != 1500 || got.Currency != "EUR" || got.Reference != "bank-1" ||
		got.RecordedBy != "ann" || got.Refund != "refunded-by-hand" || got.RecordedAt.IsZero() {
		t.Errorf("--json: %+v", got)
	}
}

// TestRentalctlListsEachRefundOwedAndRecordsEachOnItsOwn owes a rental two refunds in the
// world: its own late success's, and money a generic event reported taken on
// another provider payment (recorded on the payment by the process's reaction to
// MismatchRefundOwed). rentalctl refunds lists both; refund-made-by-hand with
// --payment-id settles that one alone (another amount or currency refused), and
// without it the rental's own; each leaves the list on its own.
func TestRentalctlListsEachRefundOwedAndRecordsEachOnItsOwn(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	id := outstanding[0]
	ref := payment.ReferenceFor(id)
	ctx := context.Background()
	if _, err := w.Commands.Payment(ctx, payment.CancelPayment{Reference: ref}, command.Meta{}); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "late-1", Kind: payment.ProviderSucceeded, Reference: ref, Unstated: payment.AllFacts, Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	res, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "other-1", Kind: payment.ProviderSucceeded, Reference: ref,
		PaymentID: "pay_other", Amount: 700, Currency: "USD", Digest: "d2"})
	if err != nil || res.Mismatch == nil || !res.Mismatch.RefundDue {
		t.Fatalf("a success on another payment id: %+v, %v", res, err)
	}
	receipt := w.Read(command.ReceiptStreamID("generic", "other-1"))
	if len(receipt) != 2 || receipt[1].Type != "MismatchRefundOwed" {
		t.Fatalf("the mismatch's receipt: %+v", receipt)
	}
	if err := w.Process.Handle(ctx, receipt[1]); err != nil {
		t.Fatal(err)
	}
	r := must(t, e, "refunds")
	if !strings.HasSuffix(r.stdout, "\n2 refunds owed\n") || !strings.Contains(r.stdout, " pay_other ") || !strings.Contains(r.stdout, " other-payment ") ||
		!strings.Contains(r.stdout, "7.00 USD") || !strings.Contains(r.stdout, " late-success ") {
		t.Fatalf("refunds:\n%s", r.stdout)
	}
	for _, c := range []struct {
		args []string
		says string
	}{
		{[]string{"--amount", "1500"}, "700 USD is owed on provider payment pay_other, not 1500"},
		{[]string{"--amount", "700", "--currency", "EUR"}, "700 USD is owed on provider payment pay_other, not 700 EUR"},
	} {
		args := append([]string{"refund-made-by-hand", id, "--payment-id", "pay_other", "--reference", "bank-2", "--by", "ann"}, c.args...)
		if r := wantStatus(t, 1, e, args...); !strings.Contains(r.err.Error(), c.says) {
			t.Errorf("%q: %v; want it to say %q", args, r.err, c.says)
		}
	}
	for _, bad := range [][]string{{"--payment-id", "pay\nother"}, {"--currency", "usd"}} {
		wantStatus(t, 2, e, append([]string{"refund-made-by-hand", id, "--amount", "700", "--reference", "bank-2", "--by", "ann"}, bad...)...)
	}
	r = must(t, e, "refund-made-by-hand", id, "--payment-id", "pay_other", "--amount", "700", "--currency", "USD", "--reference", "bank-2", "--by", "ann")
	if !strings.HasPrefix(r.stdout, id+": refunded-by-hand: 7.00 USD paid back by hand under reference \"bank-2\"") || !strings.HasSuffix(r.stdout, "(owed on provider payment \"pay_other\")\n") {
		t.Errorf("stdout %q", r.stdout)
	}
	if r := must(t, e, "refunds"); !strings.HasSuffix(r.stdout, "\n1 refund owed\n") || strings.Contains(r.stdout, "pay_other") {
		t.Fatalf("refunds after the other payment's:\n%s", r.stdout)
	}
	wantStatus(t, 1, e, "refund-made-by-hand", id, "--payment-id", "pay_other", "--amount", "700", "--reference", "bank-2", "--by", "ann")
	must(t, e, "refund-made-by-hand", id, "--amount", "1500", "--reference", "bank-1", "--by", "ann")
	if r := must(t, e, "refunds"); !strings.HasSuffix(r.stdout, "\n0 refunds owed\n") {
		t.Fatalf("refunds after both:\n%s", r.stdout)
	}
}

// TestARefundOwedAtAReceiptOnlyIsRepairedOntoItsPayment: money another provider
// payment took whose refund is owed at its event's receipt (MismatchRefundOwed)
// but recorded on no payment (a receipt written before the process recorded it,
// or whose reaction was lost) is reported by rentalctl audit, with what to run;
// repair --stream, dry or not, delivers the receipt to the process, which records
// it owed on the payment, where rentalctl refunds lists it and the audit is clean
// once the projector has it. A stream that is not a receipt is a usage error.
func TestARefundOwedAtAReceiptOnlyIsRepairedOntoItsPayment(t *testing.T) {
	w, outstanding := world(t)
	e := emulatorEnv(w, emulatortest.Server(t).Endpoint)
	id := outstanding[0]
	ref := payment.ReferenceFor(id)
	ctx := context.Background()
	if _, err := w.Commands.ApplyProviderEvent(ctx, payment.ProviderEvent{Provider: "generic", EventID: "other-1", Kind: payment.ProviderSucceeded, Reference: ref,
		PaymentID: "pay_other", Amount: 700, Currency: "USD", Digest: "d"}); err != nil {
		t.Fatal(err)
	}
	receipt := command.ReceiptStreamID("generic", "other-1")
	must(t, e, "rebuild")
	r := wantStatus(t, 1, e, "audit", "--quiet")
	if !strings.Contains(r.stdout, "money-kept ") || !strings.Contains(r.stdout, "rentalctl repair --stream "+receipt) || !strings.Contains(r.stdout, ", 0 refunds owed in ") {
		t.Fatalf("audit of a refund owed at a receipt only:\n%s", r.stdout)
	}
	before := len(w.PaymentOf(id))
	if r := must(t, e, "repair", "--stream", receipt, "--dry-run"); r.stdout != receipt+": would deliver 2 records: process<-ProviderEventMismatched v1, process<-MismatchRefundOwed v2\n" || len(w.PaymentOf(id)) != before {
		t.Fatalf("repair --stream --dry-run: %q", r.stdout)
	}
	if r := must(t, e, "repair", "--stream", receipt); r.stdout != receipt+": repaired 2 records: process<-ProviderEventMismatched v1, process<-MismatchRefundOwed v2\n" {
		t.Fatalf("repair --stream: %q", r.stdout)
	}
	if recs := w.PaymentOf(id); len(recs) != before+1 || recs[before].Type != "UnexpectedRefundOwed" {
		t.Fatalf("the payment after the repair: %+v", recs)
	}
	if r := must(t, e, "refunds"); !strings.Contains(r.stdout, " pay_other ") || !strings.HasSuffix(r.stdout, "\n1 refund owed\n") {
		t.Fatalf("refunds:\n%s", r.stdout)
	}
	must(t, e, "repair", "--stream", receipt) // again: nothing more
	if n := len(w.PaymentOf(id)); n != before+1 {
		t.Fatalf("a second repair appended %d events", n-before-1)
	}
	must(t, e, "rebuild") // the projector's part, which the live one does
	if r := must(t, e, "audit", "--quiet"); !strings.Contains(r.stdout, ", 1 refund owed in ") {
		t.Fatalf("audit after the repair:\n%s", r.stdout)
	}
	for _, args := range [][]string{{"repair", "--stream", payment.StreamID(ref)}, {"repair", "--stream", receipt, "--stuck"}, {"repair", "--stream", ""}} {
		wantStatus(t, 2, e, args...)
	}
}
