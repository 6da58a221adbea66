// Package dynamo is the Deadlines table: a deadlines.Projection on DynamoDB. One
// item per row of every kind, keyed by the kind's prefix and the row's subject;
// while it is outstanding, its kind and write shard ("loan#2") and its due time
// put it in the table's index (DueByKind), whose every partition holds one kind's
// rows of one shard in due order, so that a sweep reads a kind's overdue rows
// with one query per shard and reads nothing else. A settled row leaves the index
// and stays as a marker, which DynamoDB's TTL deletes later, so that a late or
// replayed opening never brings it back.
//
// Definition, Create and CloudFormation give the table itself: for tests, and for
// a deployment.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
)

// API is the part of the DynamoDB client a Table uses: single-item writes and
// reads, and queries of the index. *dynamodb.Client is one.
type API interface {
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

var _ API = (*dynamodb.Client)(nil)

// Defaults and bounds of a Table's settings.
const (
	DefaultShards    = 4
	MaxShards        = 256
	DefaultMarkerTTL = 72 * time.Hour
)

// The table's attributes and index. The names are the deployed table's: renaming
// one is a change of schema.
const (
	attrKey       = "key"       // partition key (S): the kind's key prefix and the subject
	attrSubject   = "subject"   // S: what the row is about
	attrKindShard = "kindShard" // S: the kind's name, "#", the write shard; only while outstanding
	attrDueAt     = "dueAtMs"   // N: when the row falls due, Unix milliseconds
	attrVersion   = "version"   // N: the position of the last record applied, for ordered kinds
	attrSettled   = "settled"   // S: how the row settled, on markers only
	attrExpiresAt = "expiresAt" // N: Unix seconds when DynamoDB's TTL deletes a marker
	indexName     = "DueByKind" // outstanding rows by kind and shard, soonest due first
)

// Table is the Deadlines table over a set of kinds: a deadlines.Projection. It is
// safe for concurrent use, and so is the table for any number of Tables, in any
// number of processes, writing at once.
type Table struct {
	client    API
	table     string
	kinds     deadlines.Kinds
	shards    int
	markerTTL time.Duration
}

var _ deadlines.Projection = (*Table)(nil)

// Option sets one of a Table's settings.
type Option func(*settings)

type settings struct {
	shards    int
	markerTTL time.Duration
}

// WithShards spreads each kind's outstanding rows over n partitions of the index
// (1 to MaxShards; DefaultShards without it): more for kinds with many rows due at
// once. Every writer and reader of a table must use the same count (CheckShards);
// Reshard changes it.
func WithShards(n int) Option { return func(s *settings) { s.shards = n } }

// WithMarkerTTL keeps a settled row's marker for d after the record that settled
// it (DefaultMarkerTTL without it), after which DynamoDB's TTL deletes it: d must
// be longer than any record of the row may arrive late, or be replayed without a
// rebuild.
func WithMarkerTTL(d time.Duration) Option { return func(s *settings) { s.markerTTL = d } }

// New returns the Deadlines table named table, reached through client, projecting
// kinds. It checks its settings, not the table: CheckShards does that. A kind
// whose key prefix starts "#config", the key of the table's own item, is refused.
func New(client API, table string, kinds deadlines.Kinds, opts ...Option) (*Table, error) {
	s := settings{shards: DefaultShards, markerTTL: DefaultMarkerTTL}
	for _, o := range opts {
		o(&s)
	}
	var errs []error
	if client == nil {
		errs = append(errs, errors.New("dynamo: no client"))
	}
	if table == "" {
		errs = append(errs, errors.New("dynamo: no table name"))
	}
	if kinds.Len() == 0 {
		errs = append(errs, errors.New("dynamo: no kinds (deadlines.NewKinds)"))
	}
	for _, k := range kinds.All() {
		if strings.HasPrefix(configKey, k.KeyPrefix()) {
			errs = append(errs, fmt.Errorf("dynamo: kind %q: key prefix %q may make the table's own key %q: want another", k.Name, k.KeyPrefix(), configKey))
		}
	}
	if s.shards < 1 || s.shards > MaxShards {
		errs = append(errs, fmt.Errorf("dynamo: %d shards: want 1 to %d", s.shards, MaxShards))
	}
	if s.markerTTL <= 0 {
		errs = append(errs, fmt.Errorf("dynamo: marker TTL %s: want a positive duration", s.markerTTL))
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return &Table{client: client, table: table, kinds: kinds, shards: s.shards, markerTTL: s.markerTTL}, nil
}

// Shards implements deadlines.Index.
func (t *Table) Shards() int { return t.shards }

// shardOf returns the write shard of the row about subject: a stable hash of the
// subject, so that rows spread evenly and a row keeps its shard.
func (t *Table) shardOf(subject string) int {
	h := fnv.New32a()
	h.Write([]byte(subject))
	return int(h.Sum32() % uint32(t.shards))
}

// partition is the index partition of kind's rows in shard: no kind's is the
// start of another's, since "#" is in no kind's name.
func partition(kind string, shard int) string { return kind + "#" + strconv.Itoa(shard) }

// lane is what starts every partition of kind's rows.
func lane(kind string) string { return kind + "#" }
