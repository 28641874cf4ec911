package events

import (
	"fmt"
	"strconv"
)

// Encode returns the canonical JSON of a valid event: id, type, ts, user_id,
// then the fields of its type (product_id, device, store_id; target_id;
// items), omitting an empty target_id and a device or store_id of NoValue.
// Decode(Encode(ev)) equals ev. An event that fails Validate is an error
// wrapping its *ValidationError.
func Encode(ev Event) ([]byte, error) {
	if err := validate(&ev); err != nil {
		return nil, fmt.Errorf("events: encode event %q: %w", cut(ev.ID, maxValueLen), err)
	}
	b := make([]byte, 0, 160+80*len(ev.Items))
	b = append(b, `{"id":`...)
	b = appendString(b, ev.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, string(ev.Type))
	b = append(b, `,"ts":`...)
	b = strconv.AppendInt(b, ev.TS, 10)
	b = append(b, `,"user_id":`...)
	b = appendString(b, ev.UserID)
	switch ev.Type {
	case View:
		b = append(b, `,"product_id":`...)
		b = appendString(b, ev.ProductID)
		if ev.Device != NoValue {
			b = append(b, `,"device":`...)
			b = appendString(b, ev.Device)
		}
		if ev.StoreID != NoValue {
			b = append(b, `,"store_id":`...)
			b = appendString(b, ev.StoreID)
		}
	case Click:
		if ev.TargetID != "" {
			b = append(b, `,"target_id":`...)
			b = appendString(b, ev.TargetID)
		}
	case Order:
		b = append(b, `,"items":[`...)
		for i, it := range ev.Items {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"product_id":`...)
			b = appendString(b, it.ProductID)
			b = append(b, `,"quantity":`...)
			b = strconv.AppendInt(b, it.Quantity, 10)
			b = append(b, `,"price_cents":`...)
			b = strconv.AppendInt(b, it.PriceCents, 10)
			b = append(b, '}')
		}
		b = append(b, ']')
	case HistoryItemRemoved:
		b = append(b, `,"product_id":`...)
		b = appendString(b, ev.ProductID)
	}
	return append(b, '}'), nil
}

// appendString appends s as a JSON string. s is printable ASCII (validated),
// so only '"' and '\' need escaping.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if c := s[i]; c == '"' || c == '\\' {
			b = append(b, '\\', c)
		} else {
			b = append(b, c)
		}
	}
	return append(b, '"')
}
