package events

import (
	"strconv"
	"unicode/utf8"
)

// Decode decodes and validates one Kafka record value (docs/contract.md section 2): one
// JSON object in UTF-8, without duplicate keys, nested at most MaxDepth deep,
// with nothing after it. Unknown fields, and fields of other event types,
// are ignored; an optional field that is null counts as absent. A view's
// absent device and store_id become NoValue.
//
// On failure the error is a *ValidationError: syntax and structure problems
// come first, then the fields in the order id, type, ts, user_id and those
// of the type.
func Decode(data []byte) (Event, error) {
	if !utf8.Valid(data) {
		return Event{}, &ValidationError{Field: FieldRecord, Rule: "not valid UTF-8"}
	}
	s := scanner{data: data}
	var f fields
	if err := s.record(&f); err != nil {
		return Event{}, err
	}
	ev, err := s.event(&f)
	if err != nil {
		return Event{}, err
	}
	return ev, nil
}

// fields holds what the scan of a record found for the known keys.
type fields struct {
	id, typ, ts, userID, productID, device, storeID, targetID, items span
	// list, count and itemErr are the order items when items is an array:
	// the valid ones (up to MaxItems), how many elements, the first
	// element breaking a rule.
	list    []Item
	count   int
	itemErr *ValidationError
	// itemCtrl is the first item product_id holding raw control bytes.
	itemCtrl span
}

// record scans the whole record into f.
func (s *scanner) record(f *fields) *ValidationError {
	s.ws()
	if s.pos >= len(s.data) {
		return &ValidationError{Field: FieldRecord, Rule: "not valid JSON: empty value"}
	}
	if s.data[s.pos] == '{' {
		if err := s.top(f); err != nil {
			return err
		}
		s.ws()
		if s.pos < len(s.data) {
			return &ValidationError{Field: FieldRecord, Rule: "trailing data after the JSON object at offset " + strconv.Itoa(s.pos)}
		}
		return nil
	}
	sp, err := s.value(0, false)
	if err != nil {
		return err
	}
	s.ws()
	if s.pos < len(s.data) {
		return s.unexpected()
	}
	return &ValidationError{Field: FieldRecord, Rule: "must be one JSON object; " + s.got(sp)}
}

// top scans the record's object, keeping the spans of the known keys.
func (s *scanner) top(f *fields) *ValidationError {
	s.pos++
	if s.peek('}') {
		s.pos++
		return nil
	}
	var keys keySet
	for {
		k, err := s.key(&keys)
		if err != nil {
			return err
		}
		var dst *span
		switch string(k) {
		case "id":
			dst = &f.id
		case "type":
			dst = &f.typ
		case "ts":
			dst = &f.ts
		case "user_id":
			dst = &f.userID
		case "product_id":
			dst = &f.productID
		case "device":
			dst = &f.device
		case "store_id":
			dst = &f.storeID
		case "target_id":
			dst = &f.targetID
		case "items":
			dst = &f.items
		}
		var sp span
		if dst == &f.items && s.peek('[') {
			sp.start, sp.kind = s.pos, '['
			err = s.items(f, 2)
			sp.end = s.pos
		} else {
			sp, err = s.value(1, dst != nil)
		}
		if err != nil {
			return s.under(err, keySeg(k))
		}
		if dst != nil {
			*dst = sp
		}
		if done, err := s.next('}'); err != nil || done {
			return err
		}
	}
}

// items scans the items array at depth, collecting order items into f.
func (s *scanner) items(f *fields, depth int) *ValidationError {
	if depth > MaxDepth {
		return s.tooDeep()
	}
	s.pos++
	if s.peek(']') {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if s.peek('{') {
			it, bad, err := s.item(depth+1, i, &f.itemCtrl)
			if err != nil {
				return s.under(err, indexSeg(i))
			}
			switch {
			case bad != nil:
				if f.itemErr == nil {
					f.itemErr = bad
				}
			case len(f.list) < MaxItems:
				if f.list == nil {
					f.list = make([]Item, 0, 8)
				}
				f.list = append(f.list, it)
			}
		} else {
			sp, err := s.value(depth, false)
			if err != nil {
				return s.under(err, indexSeg(i))
			}
			if f.itemErr == nil {
				f.itemErr = &ValidationError{Field: itemField(i, ""), Rule: ruleItem + "; " + s.got(sp)}
			}
		}
		f.count++
		if done, err := s.next(']'); err != nil || done {
			return err
		}
	}
}

// item scans the i-th order item, an object at depth. It returns the item,
// or the rule it breaks (bad), or a hard error.
func (s *scanner) item(depth, i int, ctrl *span) (it Item, bad, err *ValidationError) {
	if depth > MaxDepth {
		return it, nil, s.tooDeep()
	}
	s.pos++
	var pid, qty, price span
	if s.peek('}') {
		s.pos++
	} else {
		var keys keySet
		for {
			k, err := s.key(&keys)
			if err != nil {
				return it, nil, err
			}
			var dst *span
			switch string(k) {
			case "product_id":
				dst = &pid
			case "quantity":
				dst = &qty
			case "price_cents":
				dst = &price
			}
			sp, err := s.value(depth, dst == &pid)
			if err != nil {
				return it, nil, s.under(err, keySeg(k))
			}
			if dst != nil {
				*dst = sp
			}
			done, err := s.next('}')
			if err != nil {
				return it, nil, err
			}
			if done {
				break
			}
		}
	}
	if pid.ctrl && ctrl.kind == 0 {
		*ctrl = pid
	}
	it.ProductID, bad = s.textField(pid, fieldRef{"product_id", i}, nameRule(), true)
	if bad != nil {
		return it, bad, nil
	}
	it.Quantity, bad = s.intField(qty, fieldRef{"quantity", i}, ruleQuantity, 1, MaxQuantity)
	if bad != nil {
		return it, bad, nil
	}
	it.PriceCents, bad = s.intField(price, fieldRef{"price_cents", i}, rulePrice, 0, MaxPriceCents)
	return it, bad, nil
}
