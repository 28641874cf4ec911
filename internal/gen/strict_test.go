package gen

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"unicode/utf8"
)

// This file is a minimal, strict validator of docs/contract.md section 2 written for the
// tests only: it decides independently of the generator whether a record
// value is a valid event.

const maxDepth = 32 // nesting deeper than this is rejected (our poison uses 100)

var intPattern = regexp.MustCompile(`^-?(0|[1-9][0-9]*)$`)

// checkID applies the id rule: 1..128 printable ASCII bytes, no space, '{', '}'.
func checkID(s string) error {
	if len(s) < 1 || len(s) > 128 {
		return fmt.Errorf("id length %d", len(s))
	}
	return printable(s, "{}")
}

// checkName applies the user_id rule: 1..64 printable ASCII, no space '{' '}' ':'.
func checkName(s string) error {
	if len(s) < 1 || len(s) > 64 {
		return fmt.Errorf("name length %d", len(s))
	}
	return printable(s, "{}:")
}

func printable(s, banned string) error {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c > '~' || bytes.IndexByte([]byte(banned), c) >= 0 {
			return fmt.Errorf("byte %q at %d", c, i)
		}
	}
	return nil
}

// checkSyntax rejects invalid UTF-8, duplicate keys, excessive depth and
// anything that is not exactly one JSON value.
func checkSyntax(v []byte) error {
	if !utf8.Valid(v) {
		return errors.New("invalid UTF-8")
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.UseNumber()
	if err := walk(dec, 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// walk consumes one JSON value from dec.
func walk(dec *json.Decoder, depth int) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("syntax: %w", err)
	}
	d, ok := tok.(json.Delim)
	if !ok {
		return nil
	}
	if depth+1 > maxDepth {
		return errors.New("nested too deep")
	}
	keys := map[string]bool{}
	for dec.More() {
		if d == '{' {
			k, err := dec.Token()
			if err != nil {
				return fmt.Errorf("syntax: %w", err)
			}
			ks := k.(string)
			if keys[ks] {
				return fmt.Errorf("duplicate key %q", ks)
			}
			keys[ks] = true
		}
		if err := walk(dec, depth+1); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil { // closing delimiter
		return fmt.Errorf("syntax: %w", err)
	}
	return nil
}

// strictEvent is what the validator extracts from a valid value.
type strictEvent struct {
	ID, Type, UserID, ProductID string
	TS                          int64
}

// validate returns the event if v is a valid event per docs/contract.md section 2.
func validate(v []byte) (strictEvent, error) {
	var e strictEvent
	if err := checkSyntax(v); err != nil {
		return e, err
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(v, &m); err != nil || m == nil {
		return e, fmt.Errorf("not an object: %v", err)
	}
	var err error
	str := func(name string, required bool, rule func(string) error) string {
		raw, ok := m[name]
		if !ok {
			if required && err == nil {
				err = fmt.Errorf("missing %s", name)
			}
			return ""
		}
		var s string
		if e := json.Unmarshal(raw, &s); e != nil {
			if err == nil {
				err = fmt.Errorf("%s not a string", name)
			}
			return ""
		}
		if e := rule(s); e != nil && err == nil {
			err = fmt.Errorf("%s: %w", name, e)
		}
		return s
	}
	e.ID = str("id", true, checkID)
	e.Type = str("type", true, func(string) error { return nil })
	e.UserID = str("user_id", true, checkName)
	e.TS, err = integer(m, "ts", 946684800000, 4102444800000-1, err)
	if err != nil {
		return e, err
	}
	switch e.Type {
	case "view":
		e.ProductID = str("product_id", true, checkName)
		str("device", false, checkName)
		str("store_id", false, checkName)
	case "click":
		str("target_id", false, checkName)
	case "history_item_removed":
		e.ProductID = str("product_id", true, checkName)
	case "history_cleared":
	case "order":
		if err == nil {
			err = checkItems(m["items"])
		}
	default:
		return e, fmt.Errorf("unknown type %q", e.Type)
	}
	return e, err
}

// integer reads an integer field within [lo, hi] (keeps an earlier error).
func integer(m map[string]json.RawMessage, name string, lo, hi int64, prev error) (int64, error) {
	if prev != nil {
		return 0, prev
	}
	raw, ok := m[name]
	if !ok {
		return 0, fmt.Errorf("missing %s", name)
	}
	if !intPattern.Match(raw) {
		return 0, fmt.Errorf("%s not an integer: %s", name, raw)
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s out of range: %s", name, raw)
	}
	return n, nil
}

// checkItems applies the order items rule.
func checkItems(raw json.RawMessage) error {
	if raw == nil {
		return errors.New("missing items")
	}
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return fmt.Errorf("items: %w", err)
	}
	if len(items) < 1 || len(items) > 100 {
		return fmt.Errorf("%d items", len(items))
	}
	for i, it := range items {
		var p string
		if err := json.Unmarshal(it["product_id"], &p); err != nil || checkName(p) != nil {
			return fmt.Errorf("item %d: bad product_id", i)
		}
		if _, err := integer(it, "quantity", 1, 10000, nil); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
		if _, err := integer(it, "price_cents", 0, 100000000, nil); err != nil {
			return fmt.Errorf("item %d: %w", i, err)
		}
	}
	return nil
}
