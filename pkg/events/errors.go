package events

import (
	"strconv"
	"unicode/utf8"
)

// FieldRecord is the Field of a ValidationError about the record as a whole
// (not UTF-8, not JSON, not one object, too deep, too large).
const FieldRecord = "record"

// Bounds on the parts of ValidationError.Error, so that a reason fits a
// dead-letter header.
const (
	maxValueLen = 64  // bytes of an offending value quoted in a rule
	maxFieldLen = 128 // bytes of Field shown by Error
	maxRuleLen  = 512 // bytes of Rule shown by Error
)

// ValidationError says why a record is poison (docs/contract.md section 2). Decode,
// Validate and CheckSize return it as *ValidationError.
type ValidationError struct {
	// Field names the offending field: "ts", "items[2].quantity",
	// "extra.a" for a duplicate key inside an unknown field, or FieldRecord
	// for problems of the whole record.
	Field string
	// Rule is the rule the field breaks, with the offending value quoted and
	// truncated where that helps, e.g. `must be an integer in 1..10000; got 0`.
	Rule string
}

// Error returns one printable ASCII line of bounded length naming the field
// and the rule, e.g. `field "ts": must be an integer ...` or
// `record: not valid UTF-8`.
func (e *ValidationError) Error() string {
	rule := oneLine(e.Rule, maxRuleLen)
	if e.Field == FieldRecord || e.Field == "" {
		return "record: " + rule
	}
	return "field " + strconv.QuoteToASCII(cut(e.Field, maxFieldLen)) + ": " + rule
}

// CheckSize returns a *ValidationError when a record of n bytes is larger
// than max bytes (kafka.max_record_bytes); max <= 0 means no limit.
func CheckSize(n, max int) error {
	if max > 0 && n > max {
		return &ValidationError{
			Field: FieldRecord,
			Rule:  "larger than kafka.max_record_bytes (" + strconv.Itoa(max) + " bytes): " + strconv.Itoa(n) + " bytes",
		}
	}
	return nil
}

// cut truncates s to at most max bytes on a rune boundary, marking a cut
// with "...".
func cut(s string, max int) string {
	if len(s) <= max {
		return s
	}
	i := max
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "..."
}

// quoteValue quotes an offending value for a rule: ASCII only, escaped,
// truncated to maxValueLen bytes before quoting ("..." after the quote marks
// a cut).
func quoteValue(s string) string {
	if len(s) <= maxValueLen {
		return strconv.QuoteToASCII(s)
	}
	c := cut(s, maxValueLen)
	return strconv.QuoteToASCII(c[:len(c)-3]) + "..."
}

// oneLine truncates s to max bytes and escapes anything that is not
// printable ASCII, so the result is one printable line.
func oneLine(s string, max int) string {
	s = cut(s, max)
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] > 0x7e {
			q := strconv.QuoteToASCII(s)
			return q[1 : len(q)-1]
		}
	}
	return s
}
