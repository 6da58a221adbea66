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
