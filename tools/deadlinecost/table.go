package deadlinecost

import (
	"hash/fnv"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"

	deadlinetable "github.com/bikerental/bikerental/deadlines/dynamo"
)

// The attributes of the Deadlines table (package deadlinetable) that the designs
// write, each design on a table of that layout: its key and its index's keys as
// its definition gives them, and the others as it writes them
// (TestTheDesignsWriteTheTablesAttributes holds them to what it writes).
var (
	attrKey       = aws.ToString(deadlinetable.Definition("").KeySchema[0].AttributeName)
	indexName     = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].IndexName)
	attrKindShard = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema[0].AttributeName)
	attrDueAt     = aws.ToString(deadlinetable.Definition("").GlobalSecondaryIndexes[0].KeySchema[1].AttributeName)
)

const (
	attrSubject   = "subject"
	attrSettled   = "settled"
	attrExpiresAt = "expiresAt"
)

// partition is the index partition of kind's rows in shard, as the Deadlines
// table names it: the kind's name, "#", the shard.
func partition(kind string, shard int) string { return lane(kind) + strconv.Itoa(shard) }

// lane is what starts every partition of kind's rows.
func lane(kind string) string { return kind + "#" }

// shardOf returns the write shard of the rows about subject, as the Deadlines
// table spreads them: FNV-1a of the subject, modulo the shards.
func (e *Env) shardOf(subject string) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(e.Shards))
}

// subjectOf returns the subject of a row's key, by the kind whose prefix it has.
func (e *Env) subjectOf(key string) (string, bool) {
	for _, k := range e.Kinds.All() {
		if s, ok := k.SubjectOf(key); ok {
			return s, true
		}
	}
	return "", false
}
