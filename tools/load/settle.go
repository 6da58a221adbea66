package load

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/bikerental/bikerental/internal/domain/rental"
)

// EndState is where the rentals and bikes of a run ended, as GET /rentals/{id} and
// GET /bikes/{id} show them once the stack is quiet.
type EndState struct {
	// Rentals maps each rental id of the report to its status.
	Rentals map[string]string `json:"rentals"`
	// Bikes maps each bike id of the report to its status: "available", "rented",
	// "requested" or "not registered". GET /bikes/{id} is public and says only
	// whether a bike is available; one that is not is rented when one of the
	// report's rentals of it ended approved (its renter has it: a bike is rented only
	// by an approved rental, and that rental is one of the run's), and requested
	// otherwise (a request, not yet approved nor rejected, holds it).
	Bikes map[string]string `json:"bikes"`
	// Refunds maps each rental of the report whose payment has a refund, money taken
	// after the payment was given up on, to where it stands: "requested", "owed" or
	// "refunded".
	Refunds map[string]string `json:"refunds,omitempty"`
	// Waited is how long the stack took to become quiet.
	Waited time.Duration `json:"waitedNs"`
	// Requests, Unclean and UncleanSamples count the reads, as in Report.
	Requests       int64    `json:"requests"`
	Unclean        int64    `json:"unclean"`
	UncleanSamples []string `json:"uncleanSamples,omitempty"`
}

// Settle waits, for at most timeout, until the stack is quiet: no rental of rep
// still requested, awaiting payment, rejecting or cancelling, no bike of rep still
// requested (a bike is released a moment after its payment is called off). It reads every rental and
// bike every 250ms (or cfg.Poll, if longer), the rentals with an operator's token
// (an operator reads every renter's rentals) and the bikes with none, and returns
// their last statuses (see EndState.Bikes), with an error naming the stragglers if
// the stack did not become quiet in time. Only cfg.BaseURL, cfg.Client, cfg.Poll and
// cfg.MaxBusyRetries are used. An error matching ErrNoToken means that the stack
// gave no operator's token, and nothing was read.
func Settle(ctx context.Context, cfg Config, rep Report, timeout time.Duration) (EndState, error) {
	if cfg.BaseURL == "" {
		return EndState{}, errors.New("load: Config.BaseURL is required")
	}
	cfg = Config{BaseURL: trimSlash(cfg.BaseURL), Client: cfg.Client, Poll: max(cfg.Poll, 250*time.Millisecond), MaxBusyRetries: cfg.MaxBusyRetries}
	if cfg.Client == nil {
		cfg.Client = NewClient()
	}
	if cfg.MaxBusyRetries <= 0 {
		cfg.MaxBusyRetries = 10
	}
	g := newGen(cfg)
	prefix := rep.Prefix
	if prefix == "" {
		prefix = "load-settle"
	}
	var err error
	if g.operator, err = g.tokens.Operator(ctx, operatorSubject(prefix)); err != nil {
		if ctx.Err() != nil {
			return EndState{}, ctx.Err()
		}
		return EndState{}, fmt.Errorf("%w: %w", ErrNoToken, err)
	}
	end := EndState{Rentals: map[string]string{}, Bikes: map[string]string{}, Refunds: map[string]string{}}
	for _, id := range rep.rentalIDs() {
		end.Rentals[id] = ""
	}
	for _, id := range rep.Bikes {
		end.Bikes[id] = ""
	}
	start := time.Now()
	giveUp := start.Add(timeout)
	var pending []string
	for {
		pending = pending[:0]
		for _, id := range slices.Sorted(maps.Keys(end.Rentals)) {
			if s := end.Rentals[id]; s != "" && !settling(s) {
				continue // a final status for this purpose: nothing the stack does alone changes it
			}
			var v rentalView
			ans, err := g.send(ctx, call{method: http.MethodGet, path: "/rentals/" + id, route: "GET /rentals/{id}", token: g.operator})
			if err == nil && g.expect(ans, &v, func() bool { return v.RentalID == id && slices.Contains(rentalStatuses, v.Status) }, http.StatusOK) {
				end.Rentals[id] = v.Status
				if r := v.refund(); r != "" {
					end.Refunds[id] = r
				} else {
					delete(end.Refunds, id)
				}
			}
			if s := end.Rentals[id]; s == "" || settling(s) {
				pending = append(pending, fmt.Sprintf("rental %s (%s)", id, orUnknown(s)))
			}
		}
		rented := rentedBikes(end.Rentals)
		for _, id := range slices.Sorted(maps.Keys(end.Bikes)) {
			var b bikeAvailability
			ans, err := g.send(ctx, call{method: http.MethodGet, path: "/bikes/" + id, route: "GET /bikes/{id}"})
			if err == nil && g.expect(ans, &b, func() bool { return b.BikeID == id && b.Available != nil }, http.StatusOK) {
				switch {
				case *b.Available:
					end.Bikes[id] = statusAvailable
				case rented[id]:
					end.Bikes[id] = statusRented
				default:
					end.Bikes[id] = statusRequested
				}
			} else if err == nil && ans.problem.is("bike-not-found") {
				end.Bikes[id] = "not registered"
			}
			if s := end.Bikes[id]; s == "" || s == statusRequested {
				pending = append(pending, fmt.Sprintf("bike %s (%s)", id, orUnknown(s)))
			}
		}
		t := g.tally.report()
		end.Requests, end.Unclean, end.UncleanSamples = t.Requests, t.Unclean, t.UncleanSamples
		end.Waited = time.Since(start)
		if len(pending) == 0 {
			return end, nil
		}
		if ctx.Err() != nil {
			return end, ctx.Err()
		}
		if time.Now().After(giveUp) {
			return end, fmt.Errorf("load: the stack was not quiet after %v: %d left, e.g. %v", timeout, len(pending), pending[:min(len(pending), 5)])
		}
		if err := sleep(ctx, g.cfg.Poll); err != nil {
			return end, err
		}
	}
}

// The bike statuses of EndState.Bikes.
const (
	statusAvailable = "available"
	statusRented    = "rented"
)

// rentedBikes returns the bikes of the rentals that ended approved: the bikes their
// renters have.
func rentedBikes(rentals map[string]string) map[string]bool {
	out := map[string]bool{}
	for id, s := range rentals {
		if s != statusApproved {
			continue
		}
		if bike, err := rental.BikeIDOf(id); err == nil {
			out[bike] = true
		}
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func trimSlash(s string) string {
	for len(s) > 0 && s[len(s)-1] == '/' {
		s = s[:len(s)-1]
	}
	return s
}

// rentalIDs returns every rental id the report names, once each, sorted.
func (r Report) rentalIDs() []string {
	seen := map[string]bool{}
	for _, ids := range r.Rentals {
		for _, id := range ids {
			seen[id] = true
		}
	}
	for _, id := range r.Diverted {
		seen[id] = true
	}
	for _, id := range r.Stuck {
		seen[id] = true
	}
	return slices.Sorted(maps.Keys(seen))
}

// expectedEnd lists the statuses each intent's rentals may end in.
var expectedEnd = map[Intent][]string{
	Confirm:        {statusApproved, statusReturned},
	Reject:         {statusRejected},
	NeverPay:       {statusCancelled},
	OperatorCancel: {statusCancelled},
}

// Check compares a run's report and end state with what must hold, and returns one
// line per violation, none if all is well: no unclean failure (in the run or while
// settling), no stuck rental, every confirmed rental approved or returned, every
// rejected one rejected, every never-paid, operator-cancelled or diverted one
// cancelled, a refund for every rental paid after its payment was called off and
// for no other, and no bike left requested.
func Check(rep Report, end EndState) []string {
	var v []string
	if rep.Unclean > 0 {
		v = append(v, fmt.Sprintf("%d unclean failures during the run", rep.Unclean))
	}
	if end.Unclean > 0 {
		v = append(v, fmt.Sprintf("%d unclean failures while settling", end.Unclean))
	}
	for _, id := range rep.Stuck {
		v = append(v, fmt.Sprintf("rental %s got stuck during the run; it ended %s", id, orUnknown(end.Rentals[id])))
	}
	for _, intent := range Intents() {
		for _, id := range rep.Rentals[intent] {
			if got := end.Rentals[id]; !slices.Contains(expectedEnd[intent], got) {
				v = append(v, fmt.Sprintf("%s rental %s ended %s, want %v", intent, id, orUnknown(got), expectedEnd[intent]))
			}
		}
	}
	for _, id := range rep.Diverted {
		if got := end.Rentals[id]; got != statusCancelled {
			v = append(v, fmt.Sprintf("rental %s, called off before the renter acted, ended %s, want cancelled", id, orUnknown(got)))
		}
	}
	late := map[string]bool{}
	for _, id := range rep.PaidLate {
		late[id] = true
		if got := end.Refunds[id]; !slices.Contains(refundStatuses, got) {
			v = append(v, fmt.Sprintf("rental %s, paid after its payment was called off, has refund %q, want one of %v", id, got, refundStatuses))
		}
	}
	for _, id := range slices.Sorted(maps.Keys(end.Refunds)) {
		if !late[id] {
			v = append(v, fmt.Sprintf("rental %s has refund %q, but no payment of it succeeded late", id, end.Refunds[id]))
		}
	}
	bikes := slices.Sorted(maps.Keys(end.Bikes))
	for _, id := range bikes {
		if s := end.Bikes[id]; s == statusRequested || s == "" {
			v = append(v, fmt.Sprintf("bike %s was left %s", id, orUnknown(s)))
		}
	}
	return v
}
