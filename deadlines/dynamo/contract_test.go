package dynamo_test

import (
	"testing"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/deadlinestest"
	"github.com/bikerental/bikerental/deadlines/dynamo"
)

// TestTheTableKeepsTheContract on moto, with its rows in one shard and spread
// over several.
func TestTheTableKeepsTheContract(t *testing.T) {
	for _, shards := range []int{1, 3} {
		deadlinestest.Run(t, func(t *testing.T, kinds deadlines.Kinds) deadlines.Projection {
			return open(t, kinds, dynamo.WithShards(shards))
		})
	}
}
