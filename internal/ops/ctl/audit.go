package ctl

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/ops/audit"
)

// Audit checks the service's invariants across both tables, reading each table's
// scans in segments parallel segments. It only reads. A report with violations is
// no error: the caller decides what they mean.
func (s *Stack) Audit(ctx context.Context, opts audit.Options, segments int) (audit.Report, error) {
	source := audit.NewDynamo(dynamodb.NewFromConfig(s.cfg), s.eventsTable(), s.deadlinesTable(), audit.WithScanSegments(segments))
	report, err := audit.Run(ctx, source, source, opts)
	if err != nil {
		return audit.Report{}, fmt.Errorf("audit of %s and %s: %w", s.eventsTable(), s.deadlinesTable(), err)
	}
	return report, nil
}
