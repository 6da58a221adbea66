package memory_test

import (
	"testing"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/deadlinestest"
	"github.com/bikerental/bikerental/deadlines/memory"
)

func TestTheMemoryIndexKeepsTheContract(t *testing.T) {
	for _, shards := range []int{1, 3} {
		deadlinestest.Run(t, func(t *testing.T, kinds deadlines.Kinds) deadlines.Projection {
			return memory.New(kinds, shards)
		})
	}
}
