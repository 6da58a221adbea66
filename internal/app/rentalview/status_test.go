package rentalview

import (
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/domain/rental"
)

// TestStatusesListsEveryStatusAViewCanHave runs status over every combination of
// what it reads: each status it returns is in Statuses, and each of Statuses is
// returned by some combination, so that whoever reads Statuses (the console's
// rules) knows them all.
func TestStatusesListsEveryStatusAViewCanHave(t *testing.T) {
	seen := map[Status]bool{}
	for _, bike := range []rental.Outcome{rental.OutcomeRequested, rental.OutcomeApproved, rental.OutcomeRejected, rental.OutcomeReturned} {
		for _, pay := range []payment.Status{payment.StatusNone, payment.StatusPrepared, payment.StatusConfirmed, payment.StatusRejected, payment.StatusCancelled} {
			for _, flags := range [][3]bool{{}, {true}, {false, true}, {false, true, true}, {true, true, true}} {
				s := status(bike, flags[0], pay, flags[1], flags[2])
				if !slices.Contains(Statuses(), s) {
					t.Errorf("status(%s, %v, %s, %v, %v) = %q, which Statuses does not list", bike, flags[0], pay, flags[1], flags[2], s)
				}
				seen[s] = true
			}
		}
	}
	for _, s := range Statuses() {
		if !seen[s] {
			t.Errorf("Statuses lists %q, which no view has", s)
		}
	}
}

// TestWhatEachStatusAllows holds the rules the console offers its actions by.
func TestWhatEachStatusAllows(t *testing.T) {
	for _, c := range []struct {
		s                          Status
		bikeOut, paymentOpen, move bool
	}{
		{StatusRequested, false, false, true},
		{StatusAwaitingPayment, false, true, true},
		{StatusApproved, true, false, false},
		{StatusOverdue, true, false, false},
		{StatusReturned, false, false, false},
		{StatusRejecting, false, false, true},
		{StatusRejected, false, false, false},
		{StatusCancelling, false, false, true},
		{StatusCancelled, false, false, false},
	} {
		if c.s.BikeOut() != c.bikeOut || c.s.PaymentOpen() != c.paymentOpen || c.s.Moving() != c.move {
			t.Errorf("%s: bike out %v, payment open %v, moving %v; want %v, %v, %v",
				c.s, c.s.BikeOut(), c.s.PaymentOpen(), c.s.Moving(), c.bikeOut, c.paymentOpen, c.move)
		}
	}
}
