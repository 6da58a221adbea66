package httpapi

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bikerental/bikerental/internal/app/deadline"
	"github.com/bikerental/bikerental/internal/app/deadlinekinds"
)

// DeadlineKinds are the kinds GET /deadlines takes in kind.
var DeadlineKinds = []string{deadlinekinds.Payment, deadlinekinds.Return, deadlinekinds.Stuck}

// Deadline is one outstanding row in GET /deadlines: its kind, the rental it is
// about, when it falls due, and how long ago it opened.
type Deadline struct {
	Kind       string    `json:"kind"`
	RentalID   string    `json:"rentalId"`
	DueAt      time.Time `json:"dueAt"`
	AgeSeconds int64     `json:"ageSeconds"`
	Overdue    bool      `json:"overdue"`
}

// Deadlines is the answer to GET /deadlines.
type Deadlines struct {
	Deadlines []Deadline `json:"deadlines"`
	Count     int        `json:"count"`
	Limit     int        `json:"limit"`
}

// deadlines answers GET /deadlines?kind=&overdue=&limit=: up to limit outstanding
// rows, of one kind or every kind, overdue or not or both, the overdue first, each
// part by due time.
func (a *API) deadlines(r *request) response {
	params := r.raw.QueryStringParameters
	q := deadline.Query{Limit: DefaultPendingLimit}
	var bad []InvalidParam
	if v, ok := params["kind"]; ok {
		known := false
		for _, k := range DeadlineKinds {
			known = known || k == v
		}
		if !known {
			bad = append(bad, InvalidParam{Name: "kind", Reason: "one of " + strings.Join(DeadlineKinds, ", ")})
		}
		q.Kind = v
	}
	if v, ok := params["overdue"]; ok {
		switch v {
		case "true", "false":
			overdue := v == "true"
			q.Overdue = &overdue
		default:
			bad = append(bad, InvalidParam{Name: "overdue", Reason: "true or false"})
		}
	}
	if v, ok := params["limit"]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxPendingLimit {
			bad = append(bad, InvalidParam{Name: "limit", Reason: fmt.Sprintf("a whole number from 1 to %d", MaxPendingLimit)})
		}
		q.Limit = n
	}
	if len(bad) > 0 {
		return invalid(bad...)
	}
	if a.cfg.Deadlines == nil {
		return blank(http.StatusNotImplemented, "the to-do list is not available in this deployment")
	}
	q.Now = a.cfg.Now()
	rows, err := a.cfg.Deadlines.Deadlines(r.ctx, q)
	if err != nil {
		return errorResponse(err)
	}
	out := Deadlines{Deadlines: make([]Deadline, len(rows)), Count: len(rows), Limit: q.Limit}
	for i, row := range rows {
		out.Deadlines[i] = Deadline{Kind: row.Kind, RentalID: row.Subject, DueAt: row.Due.UTC(),
			AgeSeconds: int64(q.Now.Sub(row.Since).Seconds()), Overdue: row.Due.Before(q.Now)}
	}
	return jsonResponse(http.StatusOK, out)
}
