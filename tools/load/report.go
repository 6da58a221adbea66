package load

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"time"
)

// WriteSummary writes the report for people: throughput, outcomes, answers by
// route and status, and the unclean failures.
func (r Report) WriteSummary(w io.Writer) {
	fmt.Fprintf(w, "Load run %s: %d requests in %v, %.1f requests/s\n", r.Prefix, r.Requests, r.Elapsed.Round(time.Millisecond), r.RequestsPerSecond)
	var rentals []string
	total := 0
	for _, i := range Intents() {
		rentals = append(rentals, fmt.Sprintf("%d %s", len(r.Rentals[i]), i))
		total += len(r.Rentals[i])
	}
	fmt.Fprintf(w, "Rentals carried through: %d (%s); called off before the renter acted: %d (paid late: %d); stuck: %d\n",
		total, strings.Join(rentals, ", "), len(r.Diverted), len(r.PaidLate), len(r.Stuck))
	fmt.Fprintf(w, "Renter identities: %d (a renter goes on as a new one after a rental it did not see approved)\n", r.RenterIdentities)
	fmt.Fprintln(w, "Outcomes:")
	writeCounts(w, r.Outcomes)
	fmt.Fprintln(w, "Answers by route and status:")
	writeCounts(w, r.Statuses)
	fmt.Fprintf(w, "Unexpected clean refusals: %d\n", r.Unexpected)
	fmt.Fprintf(w, "Unclean failures: %d\n", r.Unclean)
	for _, s := range r.UncleanSamples {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

// WriteSummary writes the end state for people: statuses counted, and how long
// settling took.
func (e EndState) WriteSummary(w io.Writer) {
	count := func(m map[string]string) map[string]int64 {
		c := map[string]int64{}
		for _, s := range m {
			c[orUnknown(s)]++
		}
		return c
	}
	fmt.Fprintf(w, "End state after %v of settling (%d reads, %d unclean):\n", e.Waited.Round(time.Millisecond), e.Requests, e.Unclean)
	fmt.Fprintln(w, "  rentals:")
	writeCountsIndent(w, count(e.Rentals), "    ")
	fmt.Fprintln(w, "  bikes:")
	writeCountsIndent(w, count(e.Bikes), "    ")
	if len(e.Refunds) > 0 {
		fmt.Fprintln(w, "  refunds:")
		writeCountsIndent(w, count(e.Refunds), "    ")
	}
	for _, s := range e.UncleanSamples {
		fmt.Fprintf(w, "  %s\n", s)
	}
}

func writeCounts(w io.Writer, m map[string]int64) { writeCountsIndent(w, m, "  ") }

func writeCountsIndent(w io.Writer, m map[string]int64, indent string) {
	keys := slices.Sorted(maps.Keys(m))
	width := 0
	for _, k := range keys {
		width = max(width, len(k))
	}
	for _, k := range keys {
		fmt.Fprintf(w, "%s%-*s %6d\n", indent, width, k, m[k])
	}
}
