package capacity

import (
	"reflect"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Unit sizes. "All size measurements in DynamoDB use binary-based units ... 1 KB =
// 1024 bytes."
const (
	// WriteUnitBytes is what one write request unit writes: "A write capacity unit
	// represents one write per second, for an item up to 1 KB in size."
	WriteUnitBytes = 1024
	// ReadUnitBytes is what one read request unit reads strongly consistently: "A
	// read capacity unit represents one strongly consistent read per second, or two
	// eventually consistent reads per second, for an item up to 4 KB in size."
	ReadUnitBytes = 4096
)

// Consistency is how a read is served, which sets its price per 4 KB.
type Consistency int

// The read consistencies.
const (
	// Eventual reads cost half a unit per 4 KB: "For an eventually consistent read
	// ..., divide this number by two." Reads of a global secondary index are always
	// eventually consistent.
	Eventual Consistency = iota
	// Strong reads cost one unit per 4 KB.
	Strong
	// Transactional reads (TransactGetItems) cost two units per 4 KB: "A
	// transactional read request of an item up to 4 KB requires two read units."
	Transactional
)

func (c Consistency) String() string {
	switch c {
	case Eventual:
		return "eventual"
	case Strong:
		return "strong"
	case Transactional:
		return "transactional"
	}
	return "unknown"
}

// WriteUnits returns the write request units of one standard write (PutItem,
// UpdateItem, DeleteItem, or one item of BatchWriteItem) whose billed size is size
// bytes: "DynamoDB rounds the item size up to the next 1 KB", and a write of nothing
// (deleting an absent item, a failed condition on an absent item) still costs one.
func WriteUnits(size int) int {
	return max(1, ceilDiv(size, WriteUnitBytes))
}

// TransactWriteUnits returns the write units of one item of a TransactWriteItems:
// "DynamoDB performs two underlying reads or writes of every item in the transaction:
// one to prepare the transaction and one to commit the transaction", so twice
// WriteUnits. They are consumed whether the transaction succeeds or is cancelled.
func TransactWriteUnits(size int) int {
	return 2 * WriteUnits(size)
}

// ReadUnits returns the read request units of one read operation that reads size
// bytes in all: a GetItem of one item, or one Query or Scan page, whose items' sizes
// are summed before rounding ("All items returned are treated as a single read
// operation, where DynamoDB computes the total size of all items and then rounds up
// to the next 4 KB boundary"). Reading nothing still costs the minimum: "If you
// perform a read operation on an item that does not exist, DynamoDB still consumes
// provisioned read throughput: A strongly consistent read request consumes one read
// capacity unit, while an eventually consistent read request consumes 0.5".
func ReadUnits(size int, c Consistency) float64 {
	blocks := float64(max(1, ceilDiv(size, ReadUnitBytes)))
	switch c {
	case Eventual:
		return blocks / 2
	case Transactional:
		return blocks * 2
	}
	return blocks
}

// ReadUnitsEach returns the read units of a BatchGetItem (or a TransactGetItems)
// that read items of the given sizes: "DynamoDB processes each item in the batch as
// an individual GetItem request, so DynamoDB first rounds up the size of each item to
// the next 4 KB boundary, and then calculates the total size."
func ReadUnitsEach(sizes []int, c Consistency) float64 {
	total := 0.0
	for _, s := range sizes {
		total += ReadUnits(s, c)
	}
	return total
}

// Index describes a global secondary index, as far as its write cost depends on it.
type Index struct {
	Name string
	// Keys are the index's key attributes: partition key, then sort key if any.
	Keys []string
	// Projection is ALL, KEYS_ONLY or INCLUDE; NonKey lists INCLUDE's attributes.
	Projection types.ProjectionType
	NonKey     []string
}

// Entry returns the index's entry for a table item whose primary key attributes are
// tableKeys: the table's and the index's key attributes and the projected ones. It
// returns nil when the item is absent or lacks one of the index's key attributes
// (the index is sparse: "A global secondary index only keeps track of data items
// where its key attributes actually exist").
func (x Index) Entry(item map[string]types.AttributeValue, tableKeys []string) map[string]types.AttributeValue {
	if item == nil {
		return nil
	}
	for _, k := range x.Keys {
		if _, ok := item[k]; !ok {
			return nil
		}
	}
	if x.Projection == types.ProjectionTypeAll {
		return item
	}
	entry := map[string]types.AttributeValue{}
	for _, names := range [][]string{tableKeys, x.Keys, x.NonKey} {
		for _, k := range names {
			if v, ok := item[k]; ok {
				entry[k] = v
			}
		}
	}
	return entry
}

// IndexWriteUnits returns the write units that maintaining the index costs when a
// table item changes from before to after (nil for absent), by the guide's cases:
// an entry appearing is one write, an entry disappearing is one write, an index key
// changing is two (a delete and a put), a change to projected attributes only is one,
// and no change to the entry costs nothing. Each write is rounded up to 1 KB of the
// index entry's size.
func (x Index) IndexWriteUnits(before, after map[string]types.AttributeValue, tableKeys []string) int {
	old, cur := x.Entry(before, tableKeys), x.Entry(after, tableKeys)
	switch {
	case old == nil && cur == nil:
		return 0
	case old == nil:
		return WriteUnits(ItemSize(cur))
	case cur == nil:
		return WriteUnits(ItemSize(old))
	}
	for _, k := range x.Keys {
		if !reflect.DeepEqual(old[k], cur[k]) {
			return WriteUnits(ItemSize(old)) + WriteUnits(ItemSize(cur))
		}
	}
	if reflect.DeepEqual(old, cur) {
		return 0
	}
	return WriteUnits(max(ItemSize(old), ItemSize(cur)))
}

func ceilDiv(n, d int) int {
	if n <= 0 {
		return 0
	}
	return (n + d - 1) / d
}
