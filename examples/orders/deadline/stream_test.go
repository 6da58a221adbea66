package deadline_test

import (
	"context"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// stream reads a table's stream on moto through the DynamoDB Streams API, from
// where it last stopped, and gives its records as Lambda delivers them.
type stream struct {
	client *dynamodbstreams.Client
	arn    string
	after  map[string]string // shard id -> sequence number of the last record read
}

// next returns the records written to the stream since the last call, shard by
// shard, in stream order.
func (s *stream) next(t *testing.T) []events.DynamoDBEventRecord {
	t.Helper()
	ctx := context.Background()
	desc, err := s.client.DescribeStream(ctx, &dynamodbstreams.DescribeStreamInput{StreamArn: aws.String(s.arn)})
	if err != nil {
		t.Fatalf("describe stream: %v", err)
	}
	var out []events.DynamoDBEventRecord
	for _, shard := range desc.StreamDescription.Shards {
		id := aws.ToString(shard.ShardId)
		in := &dynamodbstreams.GetShardIteratorInput{StreamArn: aws.String(s.arn), ShardId: aws.String(id), ShardIteratorType: streamtypes.ShardIteratorTypeTrimHorizon}
		if seq, ok := s.after[id]; ok {
			in.ShardIteratorType, in.SequenceNumber = streamtypes.ShardIteratorTypeAfterSequenceNumber, aws.String(seq)
		}
		it, err := s.client.GetShardIterator(ctx, in)
		if err != nil {
			t.Fatalf("shard iterator: %v", err)
		}
		for iterator := it.ShardIterator; iterator != nil; {
			page, err := s.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: iterator})
			if err != nil {
				t.Fatalf("get records: %v", err)
			}
			if len(page.Records) == 0 {
				break
			}
			for _, r := range page.Records {
				rec := eventRecord(r)
				rec.EventSourceArn = s.arn
				out = append(out, rec)
				s.after[id] = rec.Change.SequenceNumber
			}
			iterator = page.NextShardIterator
		}
	}
	return out
}

// eventRecord is a record of the Streams API in the shape Lambda delivers it.
func eventRecord(r streamtypes.Record) events.DynamoDBEventRecord {
	out := events.DynamoDBEventRecord{
		AWSRegion:    aws.ToString(r.AwsRegion),
		EventID:      aws.ToString(r.EventID),
		EventName:    string(r.EventName),
		EventSource:  "aws:dynamodb",
		EventVersion: aws.ToString(r.EventVersion),
	}
	if c := r.Dynamodb; c != nil {
		out.Change = events.DynamoDBStreamRecord{
			Keys:           streamImage(c.Keys),
			NewImage:       streamImage(c.NewImage),
			OldImage:       streamImage(c.OldImage),
			SequenceNumber: aws.ToString(c.SequenceNumber),
			SizeBytes:      aws.ToInt64(c.SizeBytes),
			StreamViewType: string(c.StreamViewType),
		}
		if c.ApproximateCreationDateTime != nil {
			out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *c.ApproximateCreationDateTime}
		}
	}
	return out
}

// streamImage converts an image of the Streams API; the Orders table's items hold
// strings and numbers only, and anything else becomes NULL, so that it shows.
func streamImage(image map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if image == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(image))
	for name, v := range image {
		switch v := v.(type) {
		case *streamtypes.AttributeValueMemberS:
			out[name] = events.NewStringAttribute(v.Value)
		case *streamtypes.AttributeValueMemberN:
			out[name] = events.NewNumberAttribute(v.Value)
		default:
			out[name] = events.NewNullAttribute()
		}
	}
	return out
}

// itemRecord is an item of the Orders table read by a Scan as the INSERT record
// that wrote it: what a rebuild delivers to the projector.
func itemRecord(item map[string]types.AttributeValue) events.DynamoDBEventRecord {
	image := make(map[string]events.DynamoDBAttributeValue, len(item))
	for name, v := range item {
		switch v := v.(type) {
		case *types.AttributeValueMemberS:
			image[name] = events.NewStringAttribute(v.Value)
		case *types.AttributeValueMemberN:
			image[name] = events.NewNumberAttribute(v.Value)
		default:
			image[name] = events.NewNullAttribute()
		}
	}
	return events.DynamoDBEventRecord{EventName: "INSERT", EventSource: "aws:dynamodb", Change: events.DynamoDBStreamRecord{NewImage: image, StreamViewType: "NEW_IMAGE"}}
}
