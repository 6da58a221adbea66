package streampoll

import (
	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// EventRecord converts a record read from the DynamoDB Streams API into the shape
// Lambda delivers it in, with every attribute value converted, however deeply nested.
// EventSource is "aws:dynamodb" when the record does not name one. The Streams API
// does not say which stream a record came from, so EventSourceArn is left empty for
// the caller to fill in. An attribute of a type unknown to this package (one the
// SDK reports as an unknown union member) becomes NULL, so that its name stays
// visible to whoever decodes the image.
func EventRecord(r streamtypes.Record) events.DynamoDBEventRecord {
	out := events.DynamoDBEventRecord{
		AWSRegion:    aws.ToString(r.AwsRegion),
		EventID:      aws.ToString(r.EventID),
		EventName:    string(r.EventName),
		EventSource:  aws.ToString(r.EventSource),
		EventVersion: aws.ToString(r.EventVersion),
	}
	if out.EventSource == "" {
		out.EventSource = "aws:dynamodb"
	}
	if r.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{
			Type:        aws.ToString(r.UserIdentity.Type),
			PrincipalID: aws.ToString(r.UserIdentity.PrincipalId),
		}
	}
	if c := r.Dynamodb; c != nil {
		out.Change = events.DynamoDBStreamRecord{
			Keys:           fromImage(c.Keys),
			NewImage:       fromImage(c.NewImage),
			OldImage:       fromImage(c.OldImage),
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

func fromImage(image map[string]streamtypes.AttributeValue) map[string]events.DynamoDBAttributeValue {
	if image == nil {
		return nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(image))
	for name, v := range image {
		out[name] = fromAttributeValue(v)
	}
	return out
}

func fromAttributeValue(v streamtypes.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *streamtypes.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *streamtypes.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *streamtypes.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *streamtypes.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value)
	case *streamtypes.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			list[i] = fromAttributeValue(e)
		}
		return events.NewListAttribute(list)
	case *streamtypes.AttributeValueMemberM:
		return events.NewMapAttribute(fromImage(v.Value))
	default: // NULL, an unknown union member, or nil
		return events.NewNullAttribute()
	}
}
