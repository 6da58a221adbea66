package stream

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	streamtypes "github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"

	"github.com/bikerental/bikerental/internal/eventstore"
)

// everyType holds one attribute of each DynamoDB type, nested in a list and a map, as
// the Streams API returns it and as the DynamoDB API takes it.
func everyType() (map[string]streamtypes.AttributeValue, map[string]types.AttributeValue) {
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
	sdk := map[string]types.AttributeValue{
		"s":    &types.AttributeValueMemberS{Value: "text"},
		"n":    &types.AttributeValueMemberN{Value: "-12.5"},
		"b":    &types.AttributeValueMemberB{Value: []byte{0, 1, 2}},
		"bool": &types.AttributeValueMemberBOOL{Value: true},
		"null": &types.AttributeValueMemberNULL{Value: true},
		"ss":   &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		"ns":   &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}},
		"bs":   &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2, 3}}},
	}
	var streamList []streamtypes.AttributeValue
	var sdkList []types.AttributeValue
	for _, k := range []string{"s", "n", "b", "bool", "null", "ss", "ns", "bs"} {
		streamList = append(streamList, stream[k])
		sdkList = append(sdkList, sdk[k])
	}
	streamMap := map[string]streamtypes.AttributeValue{"list": &streamtypes.AttributeValueMemberL{Value: streamList}}
	sdkMap := map[string]types.AttributeValue{"list": &types.AttributeValueMemberL{Value: sdkList}}
	for k := range stream {
		streamMap[k] = stream[k]
		sdkMap[k] = sdk[k]
	}
	stream["m"] = &streamtypes.AttributeValueMemberM{Value: streamMap}
	sdk["m"] = &types.AttributeValueMemberM{Value: sdkMap}
	stream["emptyList"] = &streamtypes.AttributeValueMemberL{Value: []streamtypes.AttributeValue{}}
	sdk["emptyList"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	stream["emptyMap"] = &streamtypes.AttributeValueMemberM{Value: map[string]streamtypes.AttributeValue{}}
	sdk["emptyMap"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	return stream, sdk
}

func TestEveryAttributeTypeSurvivesBothConversions(t *testing.T) {
	streamImage, want := everyType()
	got, err := toItem(fromImage(streamImage))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %#v\nwant %#v", got, want)
	}
}

func TestAttributeWithoutValueIsCorruptNotAPanic(t *testing.T) {
	tests := []struct {
		name  string
		image map[string]events.DynamoDBAttributeValue
	}{
		{"top level", map[string]events.DynamoDBAttributeValue{"streamId": {}}},
		{"in a list", map[string]events.DynamoDBAttributeValue{
			"tags": events.NewListAttribute([]events.DynamoDBAttributeValue{events.NewStringAttribute("a"), {}}),
		}},
		{"in a map", map[string]events.DynamoDBAttributeValue{
			"m": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"x": {}}),
		}},
		{"no image", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := DecodeImage(tc.image)
			if !errors.Is(err, eventstore.ErrCorruptRecord) {
				t.Errorf("got %v, want an error matching ErrCorruptRecord", err)
			}
		})
	}
}

func TestEventRecordCarriesEveryField(t *testing.T) {
	streamImage, _ := everyType()
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
			NewImage:                    fromImage(streamImage),
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
