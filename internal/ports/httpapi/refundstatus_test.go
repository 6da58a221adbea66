package httpapi_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"testing"

	"github.com/bikerental/bikerental/internal/domain/payment"
	"github.com/bikerental/bikerental/internal/testkit/apicontract"
)

// TestEveryRefundStatusIsDeclaredAndWorded: the refund statuses a payment can
// have (payment.RefundStatuses, but none) are those api/openapi.yaml's
// RefundStatus lists, and each has the console's words (rental.js, refundWords):
// a status added on one side fails here until every side has it.
func TestEveryRefundStatusIsDeclaredAndWorded(t *testing.T) {
	var statuses []string
	for _, r := range payment.RefundStatuses() {
		if r != payment.RefundStatusNone {
			statuses = append(statuses, string(r))
		}
	}
	var enum []string
	for _, v := range apicontract.MustLoad(t).Document().Components.Schemas["RefundStatus"].Value.Enum {
		s, _ := v.(string)
		enum = append(enum, s)
	}
	src, err := os.ReadFile(filepath.Join("console", "rental.js"))
	if err != nil {
		t.Fatal(err)
	}
	block := regexp.MustCompile(`(?s)const refundWords = \{(.*?)\n\};`).FindSubmatch(src)
	if block == nil {
		t.Fatal("rental.js has no refundWords")
	}
	var worded []string
	for _, m := range regexp.MustCompile(`(?m)^\s*'([a-z-]+)':`).FindAllSubmatch(block[1], -1) {
		worded = append(worded, string(m[1]))
	}
	for _, list := range [][]string{statuses, enum, worded} {
		slices.Sort(list)
	}
	if !slices.Equal(statuses, enum) || !slices.Equal(statuses, worded) {
		t.Errorf("refund statuses: the domain %v, api/openapi.yaml %v, the console's words %v", statuses, enum, worded)
	}
}
