package streampoll

import (
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// everyType holds one attribute of each DynamoDB type, nested in a list and a map, as
// the Streams API returns it and as Lambda delivers it in a stream record's image.
func everyType() (map[string]streamtypes.AttributeValue, map[string]events.DynamoDBAttributeValue) {
	stream := map[string]streamtypes.AttributeValue{
		"s":    &streamtypes.AttributeValueMemberS{Value: "text"},
		"n":    &streamtypes.AttributeValueMemberN{Value: "-12.5"},
		"b":    &streamtypes.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"bool": &streamtypes.AttributeValueMemberBOOL{Value: true},
		"null": &streamtypes.AttributeValueMemberNULL{Value: true},
		"ss":   &streamtypes.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &streamtypes.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &streamtypes.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
	}
	lambda := map[string]events.DynamoDBAttributeValue{
		"s":    events.NewStringAttribute("text"),
		"n":    events.NewNumberAttribute("-12.5"),
		"b":    events.NewBinaryAttribute([]byte{0, 1, 2}),
		"bool": events.NewBooleanAttribute(true),
		"null": events.NewNullAttribute(),
		"ss":   events.NewStringSetAttribute([]string{"a", "b"}),
		"ns":   events.NewNumberSetAttribute([]string{"1", "2.5"}),
		"bs":   events.NewBinarySetAttribute([][]byte{{1}, {2, 3}}),
	}
	var streamList []streamtypes.AttributeValue
	var lambdaList []events.DynamoDBAttributeValue
	for _, k := range []string{"s", "n", "b", "bool", "null", "ss", "ns", "bs"} {
		streamList = append(streamList, stream[k])
		lambdaList = append(lambdaList, lambda[k])
	}
	streamMap := map[string]streamtypes.AttributeValue{"list": &streamtypes.AttributeValueMemberL{Value: streamList}}
	lambdaMap := map[string]events.DynamoDBAttributeValue{"list": events.NewListAttribute(lambdaList)}
	for k := range stream {
		streamMap[k] = stream[k]
		lambdaMap[k] = lambda[k]
	}
	stream["m"] = &streamtypes.AttributeValueMemberM{Value: streamMap}
	lambda["m"] = events.NewMapAttribute(lambdaMap)
	stream["emptyList"] = &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{}}
	lambda["emptyList"] = events.NewListAttribute([]events.DynamoDBAttributeValue{})
	stream["emptyMap"] = &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{}}
	lambda["emptyMap"] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{})
	return stream, lambda
}

func TestEveryAttributeTypeConvertsToLambdas(t *testing.T) {
	image, want := everyType()
	if got := fromImage(image); !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}

func TestEventRecordCarriesEveryField(t *testing.T) {
	streamImage, lambdaImage := everyType()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	in := streamtypes.Record{
		AwsRegion:    aws.String("eu-west-1"),
		EventID:      aws.String("ev-1"),
		EventName:    streamtypes.OperationTypeInsert,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		UserIdentity: &streamtypes.Identity{PrincipalId: aws.String("dynamodb.amazonaws.com"), Type: aws.String("Service")},
		Dynamodb: &streamtypes.StreamRecord{
			ApproximateCreationDateTime: &at,
			Keys:                        map[string]streamtypes.AttributeValue{"s": streamImage["s"]},
			NewImage:                    streamImage,
			OldImage:                    map[string]streamtypes.AttributeValue{"n": streamImage["n"]},
			SequenceNumber:              aws.String("123"),
			SizeBytes:                   aws.Int64(99),
			StreamViewType:              streamtypes.StreamViewTypeNewAndOldImages,
		},
	}
	got := EventRecord(in)
	want := events.DynamoDBEventRecord{
		AWSRegion:    "eu-west-1",
		EventID:      "ev-1",
		EventName:    "INSERT",
		EventSource:  "aws:dynamodb",
		EventVersion: "1.1",
		UserIdentity: &events.DynamoDBUserIdentity{Type: "Service", PrincipalID: "dynamodb.amazonaws.com"},
		Change: events.DynamoDBStreamRecord{
			ApproximateCreationDateTime: events.SecondsEpochTime{Time: at},
			Keys:                        map[string]events.DynamoDBAttributeValue{"s": events.NewStringAttribute("text")},
			NewImage:                    lambdaImage,
			OldImage:                    map[string]events.DynamoDBAttributeValue{"n": events.NewNumberAttribute("-12.5")},
			SequenceNumber:              "123",
			SizeBytes:                   99,
			StreamViewType:              "NEW_AND_OLD_IMAGES",
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}

	bare := EventRecord(streamtypes.Record{EventName: streamtypes.OperationTypeRemove, Dynamodb: &streamtypes.StreamRecord{
		NewImage: map[string]streamtypes.AttributeValue{"future": &streamtypes.UnknownUnionMember{Tag: "X"}},
	}})
	if bare.EventSource != "aws:dynamodb" || bare.EventName != "REMOVE" {
		t.Errorf("bare record: source %q, name %q", bare.EventSource, bare.EventName)
	}
	if v, ok := bare.Change.NewImage["future"]; !ok || v.DataType() != events.DataTypeNull {
		t.Errorf("an unknown attribute type became %v, present %v; want NULL", v.DataType(), ok)
	}
}
