package deadlines_test

import (
	"testing"
	"time"

	"github.com/bikerental/bikerental/deadlines"
)

// TestABackedOffRowIsSentOnceAtEachSendTime sweeps every minute, at the minute,
// for a day after a row fell due, and checks that the row is sent at its due time
// and then after waits that double up to the longest, once each.
func TestABackedOffRowIsSentOnceAtEachSendTime(t *testing.T) {
	b := deadlines.Backoff{First: time.Minute, Max: 16 * time.Minute}
	due := time.Date(2026, 3, 1, 12, 0, 30, 0, time.UTC) // half a minute past a sweep
	var sent []time.Duration
	for now := due.Truncate(time.Minute); now.Before(due.Add(24 * time.Hour)); now = now.Add(time.Minute) {
		if b.Sends(due, now, time.Minute) {
			sent = append(sent, now.Sub(due))
		}
	}
	// The sweeps that follow the send times due, +1, +3, +7, +15, +31, +47 and +63
	// minutes, each half a minute later.
	want := []time.Duration{0, 1, 3, 7, 15, 31, 47, 63}
	for i := range want {
		want[i] = want[i]*time.Minute + 30*time.Second
	}
	for i, d := range sent {
		if i < len(want) && d != want[i] {
			t.Fatalf("send %d at %s after due, want %s (sends %v)", i, d, want[i], sent)
		}
		if i > 0 && sent[i]-sent[i-1] > b.Max {
			t.Fatalf("sends %s apart, more than the longest wait", sent[i]-sent[i-1])
		}
	}
	if n := len(sent); n != 4+(24*60-16)/16+1 {
		t.Errorf("%d sends in a day, want 5 before the waits reach 16 minutes and one every 16 minutes after", n)
	}
	if !(deadlines.Backoff{}).Sends(due, due.Add(time.Hour), time.Minute) {
		t.Error("no backoff: want a send at every sweep")
	}
	if b.Sends(due, due, time.Minute) {
		t.Error("sent at its due time exactly, when it is not yet overdue")
	}
}
