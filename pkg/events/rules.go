package events

import "strconv"

// Limits of docs/contract.md section 2.
const (
	// MinTS is the smallest accepted ts (2000-01-01T00:00:00Z in Unix ms).
	MinTS int64 = 946684800000
	// EndTS is the first ts no longer accepted (2100-01-01T00:00:00Z in Unix ms).
	EndTS int64 = 4102444800000
	// MaxIDLen is the longest id in bytes.
	MaxIDLen = 128
	// MaxNameLen is the longest user_id, product_id, device, store_id or
	// target_id in bytes.
	MaxNameLen = 64
	// MaxItems is the largest number of items of an order.
	MaxItems = 100
	// MaxQuantity is the largest quantity of an order item (the smallest is 1).
	MaxQuantity = 10000
	// MaxPriceCents is the largest price_cents of an order item (the smallest is 0).
	MaxPriceCents = 100000000
	// MaxDepth is the deepest nesting of JSON objects and arrays a record may
	// have, unknown fields included; the record's own object is level 1.
	MaxDepth = 16
	// NoValue is the value of an absent device or store_id of a view.
	NoValue = "-"
)

// The rules quoted in ValidationError.Rule.
const (
	ruleRequired = "required"
	ruleID       = "must be a string of 1..128 printable ASCII bytes (0x21..0x7E) without '{' or '}'"
	ruleName     = "must be a string of 1..64 printable ASCII bytes (0x21..0x7E) without '{', '}' or ':'"
	ruleType     = "must be a string naming the event type (view, click, order, history_cleared or history_item_removed)"
	ruleTS       = "must be an integer of Unix milliseconds in [946684800000, 4102444800000)"
	ruleItems    = "must be an array of 1..100 order items"
	ruleItem     = "must be an object with product_id, quantity and price_cents"
	ruleQuantity = "must be an integer in 1..10000"
	rulePrice    = "must be an integer in 0..100000000"
	ruleDup      = "duplicate key"
)

// textRule is the rule of a string field: id or name (user_id and the like).
type textRule struct {
	max     int
	colonOK bool
	rule    string
}

// idRule is the rule of id; nameRule that of user_id, product_id, device,
// store_id and target_id.
func idRule() textRule   { return textRule{max: MaxIDLen, colonOK: true, rule: ruleID} }
func nameRule() textRule { return textRule{max: MaxNameLen, rule: ruleName} }

// checkText returns "" when v obeys r, else what is wrong with v.
func checkText[T ~string | ~[]byte](v T, r textRule) string {
	if len(v) == 0 {
		return "got an empty string"
	}
	if len(v) > r.max {
		return "got " + strconv.Itoa(len(v)) + " bytes"
	}
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c < 0x21 || c > 0x7e || c == '{' || c == '}' || (c == ':' && !r.colonOK) {
			return "got " + quoteValue(string(v)) + " (byte " + hexByte(c) + " at index " + strconv.Itoa(i) + ")"
		}
	}
	return ""
}

// hexByte formats c as 0x followed by two lower-case hex digits.
func hexByte(c byte) string {
	const digits = "0123456789abcdef"
	return string([]byte{'0', 'x', digits[c>>4], digits[c&15]})
}

// parseType returns the Type named s.
func parseType[T ~string | ~[]byte](s T) (Type, bool) {
	switch string(s) {
	case "view":
		return View, true
	case "click":
		return Click, true
	case "order":
		return Order, true
	case "history_cleared":
		return HistoryCleared, true
	case "history_item_removed":
		return HistoryItemRemoved, true
	}
	return "", false
}

// unknownType is the error for a type string that names no event type.
func unknownType(s string) *ValidationError {
	return &ValidationError{Field: "type", Rule: "unknown event type " + quoteValue(s) +
		" (want view, click, order, history_cleared or history_item_removed)"}
}

// itemField names a field of the i-th order item, or the item itself when
// name is empty.
func itemField(i int, name string) string {
	f := "items[" + strconv.Itoa(i) + "]"
	if name != "" {
		f += "." + name
	}
	return f
}

// Validate checks ev against the rules Decode applies to records, and that
// the fields that do not belong to ev.Type are empty and a view's Device
// and StoreID are set (NoValue when unknown), so that Decode(Encode(ev))
// equals ev. It returns nil or a *ValidationError.
func Validate(ev Event) error {
	if err := validate(&ev); err != nil {
		return err
	}
	return nil
}

func validate(ev *Event) *ValidationError {
	if d := checkText(ev.ID, idRule()); d != "" {
		return &ValidationError{Field: "id", Rule: ruleID + "; " + d}
	}
	if ev.Type == "" {
		return &ValidationError{Field: "type", Rule: ruleRequired}
	}
	if _, ok := parseType(ev.Type); !ok {
		return unknownType(string(ev.Type))
	}
	if ev.TS < MinTS || ev.TS >= EndTS {
		return &ValidationError{Field: "ts", Rule: ruleTS + "; got " + strconv.FormatInt(ev.TS, 10)}
	}
	if err := checkField("user_id", ev.UserID); err != nil {
		return err
	}
	// Fields of ev.Type.
	switch ev.Type {
	case View:
		for _, f := range [...]struct{ name, v string }{
			{"product_id", ev.ProductID}, {"device", ev.Device}, {"store_id", ev.StoreID},
		} {
			if err := checkField(f.name, f.v); err != nil {
				return err
			}
		}
	case Click:
		if ev.TargetID != "" {
			if err := checkField("target_id", ev.TargetID); err != nil {
				return err
			}
		}
	case Order:
		if len(ev.Items) < 1 || len(ev.Items) > MaxItems {
			return &ValidationError{Field: "items", Rule: ruleItems + "; got " + strconv.Itoa(len(ev.Items)) + " items"}
		}
		for i, it := range ev.Items {
			if d := checkText(it.ProductID, nameRule()); d != "" {
				return &ValidationError{Field: itemField(i, "product_id"), Rule: ruleName + "; " + d}
			}
			if it.Quantity < 1 || it.Quantity > MaxQuantity {
				return &ValidationError{Field: itemField(i, "quantity"), Rule: ruleQuantity + "; got " + strconv.FormatInt(it.Quantity, 10)}
			}
			if it.PriceCents < 0 || it.PriceCents > MaxPriceCents {
				return &ValidationError{Field: itemField(i, "price_cents"), Rule: rulePrice + "; got " + strconv.FormatInt(it.PriceCents, 10)}
			}
		}
	case HistoryItemRemoved:
		if err := checkField("product_id", ev.ProductID); err != nil {
			return err
		}
	}
	return checkForeign(ev)
}

// checkField checks a required name field of an Event.
func checkField(name, v string) *ValidationError {
	if v == "" {
		return &ValidationError{Field: name, Rule: ruleRequired}
	}
	if d := checkText(v, nameRule()); d != "" {
		return &ValidationError{Field: name, Rule: ruleName + "; " + d}
	}
	return nil
}

// checkForeign checks that the fields that do not belong to ev.Type are empty.
func checkForeign(ev *Event) *ValidationError {
	t := ev.Type
	for _, f := range [...]struct {
		name  string
		set   bool
		owner bool
	}{
		{"product_id", ev.ProductID != "", t == View || t == HistoryItemRemoved},
		{"device", ev.Device != "", t == View},
		{"store_id", ev.StoreID != "", t == View},
		{"target_id", ev.TargetID != "", t == Click},
		{"items", ev.Items != nil, t == Order},
	} {
		if f.set && !f.owner {
			return &ValidationError{Field: f.name, Rule: "must be empty for a " + string(t) + " event"}
		}
	}
	return nil
}

// CheckName returns a *ValidationError when v breaks the rule of user_id,
// product_id, device, store_id and target_id (docs/contract.md section 2), naming field;
// else nil. Readers use it to validate ids they are asked for.
func CheckName(field, v string) error {
	if err := checkField(field, v); err != nil {
		return err
	}
	return nil
}
