package events

import (
	"strconv"
	"strings"
)

// event validates the scanned fields and builds the Event.
func (s *scanner) event(f *fields) (ev Event, err *ValidationError) {
	if err := s.foreignControl(f); err != nil {
		return ev, err
	}
	var strs stringSet // the event's strings share one allocation
	if err = s.textInto(&strs, f.id, top("id"), idRule(), true); err != nil {
		return ev, err
	}
	if ev.Type, err = s.typeField(f.typ); err != nil {
		return ev, err
	}
	if ev.TS, err = s.intField(f.ts, top("ts"), ruleTS, MinTS, EndTS-1); err != nil {
		return ev, err
	}
	if err = s.textInto(&strs, f.userID, top("user_id"), nameRule(), true); err != nil {
		return ev, err
	}
	switch ev.Type {
	case View:
		if err = s.textInto(&strs, f.productID, top("product_id"), nameRule(), true); err != nil {
			return ev, err
		}
		if err = s.textInto(&strs, f.device, top("device"), nameRule(), false); err != nil {
			return ev, err
		}
		if err = s.textInto(&strs, f.storeID, top("store_id"), nameRule(), false); err != nil {
			return ev, err
		}
		ev.Device, ev.StoreID = NoValue, NoValue // flush overwrites those present
	case Click:
		err = s.textInto(&strs, f.targetID, top("target_id"), nameRule(), false)
	case Order:
		ev.Items, err = s.itemsField(f)
	case HistoryItemRemoved:
		err = s.textInto(&strs, f.productID, top("product_id"), nameRule(), true)
	}
	if err != nil {
		return ev, err
	}
	strs.flush(&ev)
	return ev, nil
}

// foreignControl returns the syntax error for raw control bytes in a
// string the scan tolerated (to name the field) but that does not belong to
// the event's type, so is not checked as a field.
func (s *scanner) foreignControl(f *fields) *ValidationError {
	var t Type
	if f.typ.kind == '"' {
		t, _ = parseType(s.text(f.typ))
	}
	for _, c := range [...]struct {
		sp    span
		owned bool
	}{
		{f.productID, t == View || t == HistoryItemRemoved},
		{f.device, t == View},
		{f.storeID, t == View},
		{f.targetID, t == Click},
		{f.itemCtrl, t == Order},
	} {
		if c.sp.ctrl && !c.owned {
			at := c.sp.start
			for s.data[at] >= 0x20 {
				at++
			}
			return s.control(at)
		}
	}
	return nil
}

// stringSet collects the string fields of an Event as byte slices, to
// convert them with one allocation.
type stringSet struct {
	n    int
	name [5]string
	src  [5][]byte
}

// add arranges for the field named name to be set to string(b) by flush.
func (p *stringSet) add(name string, b []byte) {
	p.name[p.n], p.src[p.n] = name, b
	p.n++
}

// flush sets the fields of ev.
func (p *stringSet) flush(ev *Event) {
	var sb strings.Builder
	total := 0
	for _, b := range p.src[:p.n] {
		total += len(b)
	}
	sb.Grow(total)
	for _, b := range p.src[:p.n] {
		sb.Write(b)
	}
	all, off := sb.String(), 0
	for i, b := range p.src[:p.n] {
		v := all[off : off+len(b)]
		off += len(b)
		switch p.name[i] {
		case "id":
			ev.ID = v
		case "user_id":
			ev.UserID = v
		case "product_id":
			ev.ProductID = v
		case "device":
			ev.Device = v
		case "store_id":
			ev.StoreID = v
		case "target_id":
			ev.TargetID = v
		}
	}
}

// textInto validates a string field of the record and adds it to strs
// unless it is an absent or null optional field.
func (s *scanner) textInto(strs *stringSet, sp span, field fieldRef, r textRule, required bool) *ValidationError {
	b, err := s.textBytes(sp, field, r, required)
	if err == nil && b != nil {
		strs.add(field.name, b)
	}
	return err
}

// fieldRef names a field without building the name until an error needs it.
type fieldRef struct {
	name string
	// item is the index of the order item the field belongs to, -1 for a
	// field of the record.
	item int
}

// top refers to a field of the record.
func top(name string) fieldRef { return fieldRef{name, -1} }

// String returns the field name, e.g. "ts" or "items[2].quantity".
func (r fieldRef) String() string {
	if r.item < 0 {
		return r.name
	}
	return itemField(r.item, r.name)
}

// absent returns the error for a missing or null field, or nil when the
// field is optional.
func absent(sp span, field fieldRef, required bool) *ValidationError {
	switch {
	case !required:
		return nil
	case sp.kind == 'n':
		return &ValidationError{Field: field.String(), Rule: ruleRequired + "; got null"}
	default:
		return &ValidationError{Field: field.String(), Rule: ruleRequired}
	}
}

// textField returns the string value of a field under rule r; an absent
// or null optional field gives "".
func (s *scanner) textField(sp span, field fieldRef, r textRule, required bool) (string, *ValidationError) {
	b, err := s.textBytes(sp, field, r, required)
	return string(b), err
}

// textBytes returns the unescaped bytes of a field under rule r; an absent
// or null optional field gives nil.
func (s *scanner) textBytes(sp span, field fieldRef, r textRule, required bool) ([]byte, *ValidationError) {
	switch sp.kind {
	case 0, 'n':
		return nil, absent(sp, field, required)
	case '"':
	default:
		return nil, &ValidationError{Field: field.String(), Rule: r.rule + "; " + s.got(sp)}
	}
	b := s.text(sp)
	if d := checkText(b, r); d != "" {
		return nil, &ValidationError{Field: field.String(), Rule: r.rule + "; " + d}
	}
	return b, nil
}

// typeField returns the event type.
func (s *scanner) typeField(sp span) (Type, *ValidationError) {
	switch sp.kind {
	case 0, 'n':
		return "", absent(sp, top("type"), true)
	case '"':
	default:
		return "", &ValidationError{Field: "type", Rule: ruleType + "; " + s.got(sp)}
	}
	b := s.text(sp)
	t, ok := parseType(b)
	if !ok {
		return "", unknownType(string(b))
	}
	return t, nil
}

// intField returns the value of a required integer field in lo..hi. The
// number must be written as plain decimal digits: no sign, fraction or
// exponent (so 1.0, 1e3 and -0 are rejected).
func (s *scanner) intField(sp span, field fieldRef, rule string, lo, hi int64) (int64, *ValidationError) {
	switch sp.kind {
	case 0, 'n':
		return 0, absent(sp, field, true)
	case '0':
	default:
		return 0, &ValidationError{Field: field.String(), Rule: rule + "; " + s.got(sp)}
	}
	b := s.data[sp.start:sp.end]
	var v int64
	ok := len(b) <= 18 // larger than any limit, and fits int64
	for _, c := range b {
		if c < '0' || c > '9' {
			ok = false
			break
		}
		v = v*10 + int64(c-'0')
	}
	if !ok || v < lo || v > hi {
		return 0, &ValidationError{Field: field.String(), Rule: rule + "; " + s.got(sp)}
	}
	return v, nil
}

// itemsField returns the items of an order.
func (s *scanner) itemsField(f *fields) ([]Item, *ValidationError) {
	switch f.items.kind {
	case 0, 'n':
		return nil, absent(f.items, top("items"), true)
	case '[':
	default:
		return nil, &ValidationError{Field: "items", Rule: ruleItems + "; " + s.got(f.items)}
	}
	if f.count < 1 || f.count > MaxItems {
		return nil, &ValidationError{Field: "items", Rule: ruleItems + "; got " + strconv.Itoa(f.count) + " items"}
	}
	if f.itemErr != nil {
		return nil, f.itemErr
	}
	return f.list, nil
}

// got describes a value for a rule: its kind, and its text when short.
func (s *scanner) got(sp span) string {
	switch sp.kind {
	case '"':
		return "got string " + quoteValue(string(s.text(sp)))
	case 'n':
		return "got null"
	case 't':
		return "got true"
	case 'f':
		return "got false"
	case '{':
		return "got an object"
	case '[':
		return "got an array"
	default:
		return "got " + cut(string(s.data[sp.start:sp.end]), maxValueLen)
	}
}
