package dynamo_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/bikerental/bikerental/deadlines"
	"github.com/bikerental/bikerental/deadlines/dynamo"
)

func TestBadSettingsAreRefusedSayingWhatIsWrong(t *testing.T) {
	client := &dynamodb.Client{}
	for _, c := range []struct {
		name   string
		client dynamo.API
		table  string
		kinds  deadlines.Kinds
		opts   []dynamo.Option
		want   []string
	}{
		{"no client", nil, "t", kinds, nil, []string{"no client"}},
		{"no table", client, "", kinds, nil, []string{"no table name"}},
		{"no kinds", client, "t", deadlines.Kinds{}, nil, []string{"no kinds"}},
		{"no shards", client, "t", kinds, []dynamo.Option{dynamo.WithShards(0)}, []string{"0 shards: want 1 to 256"}},
		{"too many shards", client, "t", kinds, []dynamo.Option{dynamo.WithShards(257)}, []string{"257 shards"}},
		{"negative shards", client, "t", kinds, []dynamo.Option{dynamo.WithShards(-1)}, []string{"-1 shards"}},
		{"no marker TTL", client, "t", kinds, []dynamo.Option{dynamo.WithMarkerTTL(0)}, []string{"marker TTL 0s: want a positive duration"}},
		{"a negative marker TTL", client, "t", kinds, []dynamo.Option{dynamo.WithMarkerTTL(-time.Hour)}, []string{"marker TTL -1h0m0s"}},
		{"a kind whose keys may be the table's own", client, "t", deadlines.MustKinds(deadlines.Kind{Name: "hashed", Prefix: "#", After: time.Hour,
			Work: deadlines.Send{}, Changes: deadlines.Events{Opens: []string{"Hashed"}}}), nil, []string{`kind "hashed": key prefix "#" may make the table's own key "#config"`}},
		{"everything", nil, "", deadlines.Kinds{}, []dynamo.Option{dynamo.WithShards(0), dynamo.WithMarkerTTL(0)},
			[]string{"no client", "no table name", "no kinds", "0 shards", "marker TTL 0s"}},
	} {
		tb, err := dynamo.New(c.client, c.table, c.kinds, c.opts...)
		if err == nil || tb != nil {
			t.Errorf("%s: New = %v, %v; want an error", c.name, tb, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: %q does not say %q", c.name, err, w)
			}
		}
	}
}

func TestTheDefaultsAndTheBoundsAreGood(t *testing.T) {
	client := &dynamodb.Client{}
	for _, c := range []struct {
		opts []dynamo.Option
		want int
	}{{nil, dynamo.DefaultShards}, {[]dynamo.Option{dynamo.WithShards(1)}, 1}, {[]dynamo.Option{dynamo.WithShards(dynamo.MaxShards), dynamo.WithMarkerTTL(time.Second)}, dynamo.MaxShards}} {
		tb, err := dynamo.New(client, "t", kinds, c.opts...)
		if err != nil || tb.Shards() != c.want {
			t.Errorf("New with %d options: %v, %v; want %d shards", len(c.opts), tb, err, c.want)
		}
	}
}
