package deadlinebench

import (
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
)

// Calls counts the HTTP requests AWS SDK clients send, by operation: the requests
// that reach the emulator, retries included. It also adds up the time during which
// at least one request was waiting for its answer: behind the proxy that lets one
// request at a time reach the emulator, that is the time the emulator had work, and
// the rest is time the caller spent between requests. It is safe for concurrent use.
type Calls struct {
	next     aws.HTTPClient
	mu       sync.Mutex
	byOp     map[string]int
	inFlight int
	since    time.Time     // when inFlight last went from 0 to 1
	busy     time.Duration // closed stretches with a request in flight
}

// Counted returns a copy of cfg whose clients send their requests through calls,
// which counts them and passes them on to cfg's HTTP client (the SDK's default one if
// cfg has none).
func Counted(cfg aws.Config) (aws.Config, *Calls) {
	out := cfg.Copy()
	next := cfg.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	calls := &Calls{next: next, byOp: map[string]int{}}
	out.HTTPClient = calls
	return out, calls
}

// Do counts r and sends it.
func (c *Calls) Do(r *http.Request) (*http.Response, error) {
	op := "other"
	// JSON protocols (DynamoDB, DynamoDB Streams) name the operation in X-Amz-Target,
	// e.g. "DynamoDB_20120810.Query".
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		op = target[strings.LastIndexByte(target, '.')+1:]
	}
	c.mu.Lock()
	c.byOp[op]++
	if c.inFlight++; c.inFlight == 1 {
		c.since = time.Now()
	}
	c.mu.Unlock()
	resp, err := c.next.Do(r)
	c.mu.Lock()
	if c.inFlight--; c.inFlight == 0 {
		c.busy += time.Since(c.since)
	}
	c.mu.Unlock()
	return resp, err
}

// Reset forgets every count and the busy time; call it with no request in flight.
func (c *Calls) Reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.byOp)
	c.busy = 0
}

// Snapshot returns the counts so far, by operation, their total, and the time during
// which at least one request was in flight (up to now, if one still is).
func (c *Calls) Snapshot() (byOp map[string]int, total int, busy time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.byOp {
		total += n
	}
	busy = c.busy
	if c.inFlight > 0 {
		busy += time.Since(c.since)
	}
	return maps.Clone(c.byOp), total, busy
}

// FormatCalls renders counts as "Query 2004, PutItem 1000", largest first.
func FormatCalls(byOp map[string]int) string {
	ops := slices.Collect(maps.Keys(byOp))
	slices.SortFunc(ops, func(a, b string) int {
		if byOp[a] != byOp[b] {
			return byOp[b] - byOp[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(ops))
	for i, op := range ops {
		parts[i] = op + " " + strconv.Itoa(byOp[op])
	}
	return strings.Join(parts, ", ")
}
