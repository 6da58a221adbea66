package stream

import (
	"errors"
	"reflect"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/bikerental/bikerental/internal/eventstore"
)

// everyType holds one attribute of each DynamoDB type, nested in a list and a map, as
// Lambda delivers it in a stream record's image and as the DynamoDB API takes it.
func everyType() (map[string]events.DynamoDBAttributeValue, map[string]types.AttributeValue) {
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
	var lambdaList []events.DynamoDBAttributeValue
	var sdkList []types.AttributeValue
	for _, k := range []string{"s", "n", "b", "bool", "null", "ss", "ns", "bs"} {
		lambdaList = append(lambdaList, lambda[k])
		sdkList = append(sdkList, sdk[k])
	}
	lambdaMap := map[string]events.DynamoDBAttributeValue{"list": events.NewListAttribute(lambdaList)}
	sdkMap := map[string]types.AttributeValue{"list": &types.AttributeValueMemberL{Value: sdkList}}
	for k := range lambda {
		lambdaMap[k] = lambda[k]
		sdkMap[k] = sdk[k]
	}
	lambda["m"] = events.NewMapAttribute(lambdaMap)
	sdk["m"] = &types.AttributeValueMemberM{Value: sdkMap}
	lambda["emptyList"] = events.NewListAttribute([]events.DynamoDBAttributeValue{})
	sdk["emptyList"] = &types.AttributeValueMemberL{Value: []types.AttributeValue{}}
	lambda["emptyMap"] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{})
	sdk["emptyMap"] = &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}
	return lambda, sdk
}

func TestEveryAttributeTypeConvertsToTheSDKs(t *testing.T) {
	image, want := everyType()
	got, err := toItem(image)
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
