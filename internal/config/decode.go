package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"projector/pkg/projections"
)

// ParseDuration parses a configuration duration: Go syntax (`90s`, `1h30m`,
// `-1h`) or a whole number of days (`30d` is 720h). Fractional days (`1.5d`),
// signed days and mixed forms (`1d2h`) are errors. The sign is not checked
// here: Load rejects durations of zero or below.
func ParseDuration(s string) (time.Duration, error) {
	if n, ok := strings.CutSuffix(s, "d"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		days, err := strconv.ParseInt(n, 10, 64)
		if err != nil || days > math.MaxInt64/int64(projections.Day) {
			return 0, fmt.Errorf("duration %q is too large", s)
		}
		return time.Duration(days) * projections.Day, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("invalid duration %q: use Go syntax (90s, 2h) or whole days (30d)", s)
	}
	return d, nil
}

// decode converts a raw value from any layer (a Go value from the defaults,
// a YAML value from the file, a string from the environment or a flag) to the
// Go type of f. A failure is a *KeyError naming f.key.
func decode(f field, raw any) (any, error) {
	var (
		v   any
		msg string
	)
	switch f.kind {
	case kindString:
		v, msg = decodeString(raw)
	case kindInt:
		v, msg = decodeInt(raw)
	case kindBool:
		v, msg = decodeBool(raw)
	case kindDuration:
		v, msg = decodeDuration(raw)
	case kindList:
		v, msg = decodeList(raw)
	default:
		msg = fmt.Sprintf("unsupported key kind %d", f.kind)
	}
	if msg != "" {
		return nil, keyErr(f.key, msg)
	}
	return v, nil
}

// describe renders a raw value for an error message.
func describe(raw any) string {
	switch x := raw.(type) {
	case string:
		return strconv.Quote(x)
	case []any, []string:
		return "a list"
	case map[string]any, map[any]any:
		return "a mapping"
	case nil:
		return "nothing"
	default:
		return fmt.Sprint(x)
	}
}

// scalarString renders a YAML scalar (string, number, bool, null) as a string.
func scalarString(raw any) (string, bool) {
	switch x := raw.(type) {
	case string:
		return x, true
	case nil:
		return "", true
	case bool, int, int64, uint64, float64:
		return fmt.Sprint(x), true
	default:
		return "", false
	}
}

func decodeString(raw any) (any, string) {
	if s, ok := scalarString(raw); ok && raw != nil {
		return s, ""
	}
	return nil, fmt.Sprintf("must be a single value (got %s)", describe(raw))
}

func decodeInt(raw any) (any, string) {
	bad := fmt.Sprintf("must be an integer (got %s)", describe(raw))
	switch x := raw.(type) {
	case int:
		return x, ""
	case int64:
		if x < math.MinInt || x > math.MaxInt {
			return nil, bad
		}
		return int(x), ""
	case uint64:
		if x > math.MaxInt {
			return nil, bad
		}
		return int(x), ""
	case string:
		n, err := strconv.Atoi(strings.TrimSpace(x))
		if err != nil {
			return nil, bad
		}
		return n, ""
	}
	return nil, bad
}

func decodeBool(raw any) (any, string) {
	switch x := raw.(type) {
	case bool:
		return x, ""
	case string:
		if b, err := strconv.ParseBool(strings.TrimSpace(x)); err == nil {
			return b, ""
		}
	}
	return nil, fmt.Sprintf("must be true or false (got %s)", describe(raw))
}

func decodeDuration(raw any) (any, string) {
	switch x := raw.(type) {
	case time.Duration:
		return x, ""
	case string:
		d, err := ParseDuration(strings.TrimSpace(x))
		if err != nil {
			return nil, err.Error()
		}
		return d, ""
	}
	return nil, fmt.Sprintf("must be a duration such as 90s, 2h or 30d (got %s)", describe(raw))
}

// decodeList accepts a sequence of scalars, or one string holding a
// comma-separated list (the environment and flag form). Elements of a
// comma-separated string are trimmed; an empty string is an empty list.
// Empty lists decode to nil.
func decodeList(raw any) (any, string) {
	var out []string
	switch x := raw.(type) {
	case []string:
		out = append(out, x...)
	case []any:
		for _, e := range x {
			s, ok := scalarString(e)
			if !ok {
				return nil, fmt.Sprintf("must be a list of strings (an element is %s)", describe(e))
			}
			out = append(out, s)
		}
	case string:
		out = splitList(x)
	default:
		s, ok := scalarString(raw)
		if !ok {
			return nil, fmt.Sprintf("must be a list (got %s)", describe(raw))
		}
		out = []string{s}
	}
	if len(out) == 0 {
		return []string(nil), ""
	}
	return out, ""
}

// splitList splits a comma-separated list, trimming each element.
// An empty or blank string is an empty list; empty elements are kept
// (`a,,b` has three) so that validation can reject them.
func splitList(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
	}
	return parts
}
