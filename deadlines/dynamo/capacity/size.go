package capacity

import (
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize returns the size DynamoDB bills for an item: the sum, over its attributes,
// of the attribute name's UTF-8 length and the value's size (see ValueSize). A nil or
// empty item has size 0.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + ValueSize(v)
	}
	return n
}

// ValueSize returns the size of one attribute value, without its name, by the
// published rules:
//   - String: its UTF-8 bytes (Go strings are UTF-8 already; invalid bytes count as
//     the replacement character DynamoDB would refuse them for, three bytes each);
//   - Number: about one byte per two significant digits plus one (NumberSize);
//   - Binary: its raw bytes (not the base64 sent on the wire);
//   - Boolean and Null: one byte;
//   - List and Map: three bytes of overhead, plus for each element one byte and the
//     element's size (for a Map element, its name's length and its value's size);
//   - the sets: the sum of their elements' sizes (the guide gives no overhead for
//     sets; none is added).
//
// An unknown member type (a future addition to the SDK) counts as 0.
func ValueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return stringSize(v.Value)
	case *types.AttributeValueMemberN:
		return NumberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + ValueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for name, e := range v.Value {
			n += 1 + len(name) + ValueSize(e)
		}
		return n
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += stringSize(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += NumberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	}
	return 0
}

func stringSize(s string) int {
	if utf8.ValidString(s) {
		return len(s)
	}
	return len(strings.ToValidUTF8(s, "\uFFFD"))
}

// NumberSize returns the size of a Number value as DynamoDB's guide gives it:
// "Numbers are variable length, with up to 38 significant digits. Leading and
// trailing zeroes are trimmed. The size of a number is approximately ... (1 byte per
// two significant digits) + (1 byte)." The sign, the decimal point and an exponent
// are not digits. Zero has no significant digits and is 1 byte. A string that is not
// a number (DynamoDB would refuse it) is counted by its length the same way, as an
// upper bound.
func NumberSize(s string) int {
	mantissa := strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(mantissa, "eE"); i >= 0 {
		mantissa = mantissa[:i]
	}
	digits := make([]byte, 0, len(mantissa))
	for i := 0; i < len(mantissa); i++ {
		switch c := mantissa[i]; {
		case c >= '0' && c <= '9':
			digits = append(digits, c)
		case c == '.':
		default:
			return (len(s)+1)/2 + 1
		}
	}
	significant := strings.Trim(string(digits), "0")
	return (len(significant)+1)/2 + 1
}
