package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/bikerental/bikerental/internal/ops/ctl"
)

// TestHistoryNamesEachCauseInWords: rentalctl history prints what caused each
// event in the console's words (rentalview.View.CauseOf), the event it reacted to
// by its type, stream and version, and no bare causation id.
func TestHistoryNamesEachCauseInWords(t *testing.T) {
	at := time.Date(2026, 12, 1, 18, 40, 55, 0, time.UTC)
	view := ctl.View{RentalID: "bike-42-01J", History: []ctl.Entry{
		{EventID: "evt-1", At: at, Stream: "bike-bike-42", Version: 3, Type: "BikeRequested", Data: json.RawMessage(`{}`), CausationID: "request:req-7"},
		{EventID: "evt-2", At: at, Stream: "rentalpayment-bike-42-01J", Version: 1, Type: "RentalPaymentRequested", Data: json.RawMessage(`{}`), CausationID: "evt-1"},
		{EventID: "evt-3", At: at, Stream: "payment-rp_bike-42-01J", Version: 2, Type: "PaymentCancelled", Data: json.RawMessage(`{}`), CausationID: "sweep:2026-12-01T18:40:55Z"},
	}}
	var out bytes.Buffer
	printHistory(&out, view)
	text := out.String()
	for _, e := range view.History {
		line := lineWith(text, e.Type)
		if want := view.CauseOf(e); !strings.HasSuffix(strings.TrimSpace(line), want) {
			t.Errorf("the line of %s is %q, want it to end with %q", e.Type, line, want)
		}
	}
	if got := lineWith(text, "RentalPaymentRequested"); !strings.Contains(got, "caused by BikeRequested (bike stream, version 3)") {
		t.Errorf("the process's event is %q, want it caused by the bike's request, named", got)
	}
	if strings.Contains(text, "causedBy=") || strings.Contains(text, "request:req-7") {
		t.Errorf("history prints a bare causation id:\n%s", text)
	}
}

func lineWith(text, word string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.Contains(line, word) {
			return line
		}
	}
	return ""
}
