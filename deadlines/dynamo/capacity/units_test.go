package capacity

import (
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

type av = types.AttributeValue

func s(v string) av  { return &types.AttributeValueMemberS{Value: v} }
func n(v string) av  { return &types.AttributeValueMemberN{Value: v} }
func b(v string) av  { return &types.AttributeValueMemberB{Value: []byte(v)} }
func l(vs ...av) av  { return &types.AttributeValueMemberL{Value: vs} }
func bl(v bool) av   { return &types.AttributeValueMemberBOOL{Value: v} }
func null() av       { return &types.AttributeValueMemberNULL{Value: true} }
func m(kv ...any) av { return &types.AttributeValueMemberM{Value: item(kv...)} }

func item(kv ...any) map[string]av {
	out := map[string]av{}
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i].(string)] = kv[i+1].(av)
	}
	return out
}

// The rules of "DynamoDB item sizes and formats", one case each.
func TestItemSize(t *testing.T) {
	for _, c := range []struct {
		name string
		item map[string]av
		want int
	}{
		{"empty item", item(), 0},
		{"string: name plus UTF-8 bytes", item("name", s("héllo")), 4 + 6},
		{"empty string", item("a", s("")), 1},
		{"number: a byte per two significant digits plus one", item("n", n("123")), 1 + 3},
		{"number: leading and trailing zeroes trimmed", item("n", n("001500")), 1 + 2},
		{"number: sign, point and exponent are not digits", item("n", n("-12.34000E+3")), 1 + 3},
		{"number: zero", item("n", n("0")), 1 + 1},
		{"number: 38 digits", item("n", n(strings.Repeat("7", 38))), 1 + 20},
		{"binary: raw bytes", item("bin", b("\x00\x01\x02")), 3 + 3},
		{"boolean", item("ok", bl(false)), 2 + 1},
		{"null", item("nothing", null()), 7 + 1},
		{"empty list: three bytes", item("l", l()), 1 + 3},
		{"list: three bytes plus one per element", item("l", l(s("ab"), n("1"))), 1 + 3 + (1 + 2) + (1 + 2)},
		{"empty map: three bytes", item("m", m()), 1 + 3},
		{"map: elements carry their names", item("m", m("k", s("v"), "kk", bl(true))), 1 + 3 + (1 + 1 + 1) + (1 + 2 + 1)},
		{"nested", item("m", m("l", l(m("x", n("10"))))), 1 + 3 + (1 + 1 + 3 + (1 + 3 + (1 + 1 + 2)))},
		{"string set", item("ss", &types.AttributeValueMemberSS{Value: []string{"a", "bc"}}), 2 + 3},
		{"number set", item("ns", &types.AttributeValueMemberNS{Value: []string{"1", "100"}}), 2 + 2 + 2},
		{"binary set", item("bs", &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}}), 2 + 3},
		{"several attributes", item("pk", s("a"), "sk", n("7"), "v", bl(true)), 3 + 4 + 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ItemSize(c.item); got != c.want {
				t.Errorf("ItemSize = %d, want %d", got, c.want)
			}
		})
	}
}

func TestNumberSizeOfMalformedNumberIsAnUpperBound(t *testing.T) {
	if got := NumberSize("12ab"); got != 3 {
		t.Errorf("NumberSize(12ab) = %d, want 3", got)
	}
}

// The worked examples of "DynamoDB read and write operations" and of the guides on
// secondary indexes and transactions.
func TestUnitsOfTheGuidesExamples(t *testing.T) {
	const kb = 1024
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"a 3,500-byte item reads as 4 KB", ReadUnits(3500, Strong), 1},
		{"8 KB strongly consistent: 2 units", ReadUnits(8*kb, Strong), 2},
		{"8 KB eventually consistent: 1 unit", ReadUnits(8*kb, Eventual), 1},
		{"8 KB transactional: 4 units", ReadUnits(8*kb, Transactional), 4},
		{"GetItem of 10 KB rounds to 12 KB", ReadUnits(10*kb, Strong), 3},
		{"Query of 10 items, 40.8 KB in all, rounds to 44 KB", ReadUnits(41779, Strong), 11},
		{"Query of 1500 items of 64 bytes: 96 KB", ReadUnits(1500*64, Strong), 24},
		{"eventually consistent 80 KB: 10 units", ReadUnits(80*kb, Eventual), 10},
		{"BatchGetItem of 1.5 KB and 6.5 KB: 12 KB", ReadUnitsEach([]int{1536, 6656}, Strong), 3},
		{"index Query of 8 items of 2000 bytes: 2 units", ReadUnits(8*2000, Eventual), 2},
		{"reading nothing strongly: 1 unit", ReadUnits(0, Strong), 1},
		{"reading nothing eventually: 0.5 unit", ReadUnits(0, Eventual), 0.5},
		{"writing 500 bytes: 1 unit", float64(WriteUnits(500)), 1},
		{"writing 512 bytes: 1 unit", float64(WriteUnits(512)), 1},
		{"writing 1 KB: 1 unit", float64(WriteUnits(kb)), 1},
		{"writing 1.6 KB rounds to 2 KB", float64(WriteUnits(1638)), 2},
		{"writing 3 KB: 3 units", float64(WriteUnits(3 * kb)), 3},
		{"BatchWriteItem of 500 bytes and 3.5 KB: 5 units", float64(WriteUnits(500) + WriteUnits(int(3.5*kb))), 5},
		{"a write of nothing: 1 unit", float64(WriteUnits(0)), 1},
		{"a transaction of three 500-byte items: 6 units", float64(3 * TransactWriteUnits(500)), 6},
		{"a transactional write of 3 KB: 6 units", float64(TransactWriteUnits(3 * kb)), 6},
	} {
		if c.got != c.want {
			t.Errorf("%s: got %g, want %g", c.name, c.got, c.want)
		}
	}
}

// The cases of "Write capacity units" in the guide on global secondary indexes.
func TestIndexWriteUnits(t *testing.T) {
	keys := []string{"id"}
	keysOnly := Index{Name: "ByScore", Keys: []string{"game", "score"}, Projection: types.ProjectionTypeKeysOnly}
	all := Index{Name: "ByScoreAll", Keys: []string{"game", "score"}, Projection: types.ProjectionTypeAll}
	include := Index{Name: "ByScoreNote", Keys: []string{"game"}, Projection: types.ProjectionTypeInclude, NonKey: []string{"note"}}
	base := item("id", s("u1"), "game", s("g"), "score", n("10"), "note", s("hi"), "other", s("x"))
	with := func(k string, v av) map[string]av {
		out := map[string]av{}
		for key, val := range base {
			out[key] = val
		}
		if v == nil {
			delete(out, k)
		} else {
			out[k] = v
		}
		return out
	}
	for _, c := range []struct {
		name          string
		x             Index
		before, after map[string]av
		want          int
	}{
		{"new item with the index keys: one put", keysOnly, nil, base, 1},
		{"new item without them: nothing", keysOnly, nil, with("score", nil), 0},
		{"index key removed: one delete", keysOnly, base, with("score", nil), 1},
		{"index key attribute defined by an update: one put", keysOnly, with("score", nil), base, 1},
		{"index key changed: a delete and a put", keysOnly, base, with("score", n("11")), 2},
		{"item deleted: one delete", keysOnly, base, nil, 1},
		{"keys only, other attribute changed: nothing", keysOnly, base, with("other", s("y")), 0},
		{"all projected, other attribute changed: one write", all, base, with("other", s("y")), 1},
		{"include, included attribute changed: one write", include, base, with("note", s("ho")), 1},
		{"include, other attribute changed: nothing", include, base, with("other", s("y")), 0},
		{"nothing changed: nothing", all, base, with("other", s("x")), 0},
		{"absent before and after: nothing", all, nil, nil, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := c.x.IndexWriteUnits(c.before, c.after, keys); got != c.want {
				t.Errorf("IndexWriteUnits = %d, want %d", got, c.want)
			}
		})
	}
}

func TestIndexEntryIsKeysAndProjection(t *testing.T) {
	x := Index{Keys: []string{"shard", "at"}, Projection: types.ProjectionTypeKeysOnly}
	entry := x.Entry(item("ref", s("r1"), "shard", s("0"), "at", n("5"), "note", s("b_x")), []string{"ref"})
	if len(entry) != 3 || entry["note"] != nil {
		t.Errorf("entry = %v, want ref, shard and at only", entry)
	}
	if size := ItemSize(entry); size != 3+2+5+1+2+2 {
		t.Errorf("entry size = %d", size)
	}
}
