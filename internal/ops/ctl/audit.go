package ctl

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/internal/ops/audit"
)

// Audit checks the service's invariants across both tables, reading the Events
// table's scans in segments parallel segments and the Deadlines table through its
// index, every kind as the settings declare it. It only reads. A report with
// violations is no error: the caller decides what they mean.
func (s *Stack) Audit(ctx context.Context, opts audit.Options, segments int) (audit.Report, error) {
	listing, err := s.listing()
	if err != nil {
		return audit.Report{}, err
	}
	source := audit.NewDynamo(dynamodb.NewFromConfig(s.cfg), s.eventsTable(), audit.WithScanSegments(segments))
	opts.Kinds = listing.Kinds
	report, err := audit.Run(ctx, source, listing.Index, opts)
	if err != nil {
		return audit.Report{}, fmt.Errorf("audit of %s and %s: %w", s.eventsTable(), s.deadlinesTable(), err)
	}
	return report, nil
}
