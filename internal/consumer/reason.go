package consumer

import (
	"regexp"
	"strconv"
	"strings"
)

// Reason classes of records that are no event at all (ReasonClass).
var recordClasses = []struct{ prefix, class string }{
	{"not valid UTF-8", "not UTF-8"},
	{"not valid JSON", "not JSON"},
	{"trailing data", "not JSON"},
	{"must be one JSON object", "not an object"},
	{"nesting deeper", "too deep"},
	{"larger than", "too large"},
}

// eventFields are the fields a reason class may name; a reason about any
// other field (a duplicate key inside an unknown field, say) has the class
// "bad field", so that record contents cannot make up classes.
var eventFields = map[string]bool{
	"id": true, "type": true, "ts": true, "user_id": true, "product_id": true, "device": true,
	"store_id": true, "target_id": true, "items": true, "items[]": true,
	"items[].product_id": true, "items[].quantity": true, "items[].price_cents": true,
}

// itemIndex matches the index of an order item in a field name.
var itemIndex = regexp.MustCompile(`\[[0-9]+\]`)

// ReasonClass returns the short, stable class of a poison reason (the text
// of an events.ValidationError): "not JSON", "missing ts", "bad user_id",
// "bad items[].quantity", "unknown type", "duplicate key" and the like. It
// leaves out the offending values and offsets, so the log limiter can group
// records by it.
func ReasonClass(reason string) string {
	if rule, ok := strings.CutPrefix(reason, "record: "); ok {
		for _, c := range recordClasses {
			if strings.HasPrefix(rule, c.prefix) {
				return c.class
			}
		}
		return "bad record"
	}
	rest, ok := strings.CutPrefix(reason, "field ")
	if !ok {
		return "other"
	}
	quoted, err := strconv.QuotedPrefix(rest)
	if err != nil {
		return "bad field"
	}
	name, _ := strconv.Unquote(quoted)
	rule := strings.TrimPrefix(rest[len(quoted):], ": ")
	name = itemIndex.ReplaceAllString(name, "[]")
	switch {
	case strings.HasPrefix(rule, "duplicate key"):
		return "duplicate key"
	case !eventFields[name]:
		return "bad field"
	case strings.HasPrefix(rule, "required"):
		return "missing " + name
	case strings.HasPrefix(rule, "unknown event type"):
		return "unknown type"
	}
	return "bad " + name
}
