package events

import (
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// scanner is a strict JSON scanner over one record. It checks the grammar
// of RFC 8259, the nesting limit and duplicate keys, without recursion
// deeper than MaxDepth and without building values it does not need.
//
// Its methods return hard errors (the record is not acceptable JSON); the
// errors that name a path inside the record (duplicate keys) set pathed, and
// each enclosing container prefixes its key or index while unwinding.
type scanner struct {
	data   []byte
	pos    int
	pathed bool
}

// span locates one scanned value in data.
type span struct {
	// start and end delimit the value; for a string, its content between
	// the quotes.
	start, end int
	// kind is 0 for an absent value, else '"', 'n', 't', 'f', '0' (number),
	// '{' or '['.
	kind byte
	// esc is set for a string with backslash escapes.
	esc bool
	// ctrl is set for a string with raw control bytes (invalid JSON that
	// the scanner tolerates in known string fields, to name the field).
	ctrl bool
}

// syntax returns the error for invalid JSON at the current offset.
func (s *scanner) syntax(msg string, at int) *ValidationError {
	return &ValidationError{Field: FieldRecord, Rule: "not valid JSON: " + msg + " at offset " + strconv.Itoa(at)}
}

// unexpected returns the error for an unexpected byte or end of input.
func (s *scanner) unexpected() *ValidationError {
	if s.pos >= len(s.data) {
		return &ValidationError{Field: FieldRecord, Rule: "not valid JSON: unexpected end of input"}
	}
	r, _ := utf8.DecodeRune(s.data[s.pos:])
	return s.syntax("unexpected "+strconv.QuoteRuneToASCII(r), s.pos)
}

// control returns the error for a raw control byte in a string at offset at.
func (s *scanner) control(at int) *ValidationError {
	return s.syntax("control byte "+hexByte(s.data[at])+" in string", at)
}

// tooDeep returns the error for nesting deeper than MaxDepth.
func (s *scanner) tooDeep() *ValidationError {
	return &ValidationError{Field: FieldRecord, Rule: "nesting deeper than " + strconv.Itoa(MaxDepth) +
		" levels at offset " + strconv.Itoa(s.pos)}
}

// under prefixes seg() to the Field of a pathed error.
func (s *scanner) under(err *ValidationError, seg func() string) *ValidationError {
	if s.pathed {
		p := seg()
		if err.Field[0] == '[' {
			err.Field = p + err.Field
		} else {
			err.Field = p + "." + err.Field
		}
	}
	return err
}

// keySeg renders an object key as a path segment: bare when it is a plain
// name, else quoted in brackets.
func keySeg(key []byte) func() string {
	return func() string {
		plain := len(key) > 0 && len(key) <= maxValueLen
		for _, c := range key {
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
				plain = false
				break
			}
		}
		if plain {
			return string(key)
		}
		return "[" + quoteValue(string(key)) + "]"
	}
}

// indexSeg renders an array index as a path segment.
func indexSeg(i int) func() string {
	return func() string { return "[" + strconv.Itoa(i) + "]" }
}

// ws skips JSON whitespace.
func (s *scanner) ws() {
	for s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ' ', '\t', '\n', '\r':
			s.pos++
		default:
			return
		}
	}
}

// peek skips whitespace and reports whether the next byte is c.
func (s *scanner) peek(c byte) bool {
	s.ws()
	return s.pos < len(s.data) && s.data[s.pos] == c
}

// next consumes the ',' or the closing byte after a member or element; done
// reports the closing byte.
func (s *scanner) next(closing byte) (done bool, err *ValidationError) {
	s.ws()
	if s.pos < len(s.data) {
		switch s.data[s.pos] {
		case ',':
			s.pos++
			return false, nil
		case closing:
			s.pos++
			return true, nil
		}
	}
	return false, s.unexpected()
}

// value scans one value of any kind inside a container at depth. With lax,
// a string may hold raw control bytes (flagged in the span).
func (s *scanner) value(depth int, lax bool) (span, *ValidationError) {
	s.ws()
	if s.pos >= len(s.data) {
		return span{}, s.unexpected()
	}
	start := s.pos
	switch c := s.data[s.pos]; c {
	case '"':
		return s.str(lax)
	case '{':
		err := s.object(depth + 1)
		return span{start: start, end: s.pos, kind: '{'}, err
	case '[':
		err := s.array(depth + 1)
		return span{start: start, end: s.pos, kind: '['}, err
	case 't':
		return s.literal("true")
	case 'f':
		return s.literal("false")
	case 'n':
		return s.literal("null")
	default:
		if c == '-' || c >= '0' && c <= '9' {
			return s.number()
		}
		return span{}, s.unexpected()
	}
}

// literal scans true, false or null.
func (s *scanner) literal(word string) (span, *ValidationError) {
	start := s.pos
	if len(s.data)-s.pos < len(word) || string(s.data[s.pos:s.pos+len(word)]) != word {
		for i := 0; i < len(word) && s.pos < len(s.data) && s.data[s.pos] == word[i]; i++ {
			s.pos++
		}
		return span{}, s.unexpected()
	}
	s.pos += len(word)
	return span{start: start, end: s.pos, kind: word[0]}, nil
}

// number scans a number: -? (0 | [1-9][0-9]*) (. [0-9]+)? ([eE] [+-]? [0-9]+)?
func (s *scanner) number() (span, *ValidationError) {
	start := s.pos
	if s.data[s.pos] == '-' {
		s.pos++
	}
	switch {
	case s.pos < len(s.data) && s.data[s.pos] == '0':
		s.pos++
	case s.digits() == 0:
		return span{}, s.unexpected()
	}
	if s.pos < len(s.data) && s.data[s.pos] == '.' {
		s.pos++
		if s.digits() == 0 {
			return span{}, s.unexpected()
		}
	}
	if s.pos < len(s.data) && (s.data[s.pos] == 'e' || s.data[s.pos] == 'E') {
		s.pos++
		if s.pos < len(s.data) && (s.data[s.pos] == '+' || s.data[s.pos] == '-') {
			s.pos++
		}
		if s.digits() == 0 {
			return span{}, s.unexpected()
		}
	}
	return span{start: start, end: s.pos, kind: '0'}, nil
}

// digits consumes decimal digits and returns how many.
func (s *scanner) digits() int {
	n := s.pos
	for s.pos < len(s.data) && s.data[s.pos] >= '0' && s.data[s.pos] <= '9' {
		s.pos++
	}
	return s.pos - n
}

// str scans a string starting at its opening quote. With lax, raw control
// bytes are flagged instead of rejected.
func (s *scanner) str(lax bool) (span, *ValidationError) {
	data, i := s.data, s.pos+1
	sp := span{start: i, kind: '"'}
	for i < len(data) {
		c := data[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			i++
			continue
		}
		switch {
		case c == '"':
			sp.end = i
			s.pos = i + 1
			return sp, nil
		case c == '\\':
			sp.esc = true
			if i+1 >= len(data) {
				s.pos = len(data)
				return span{}, s.unexpected()
			}
			switch data[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(data)-i < 6 || hex4(data[i+2:i+6]) < 0 {
					return span{}, s.syntax("invalid \\u escape in string", i)
				}
				i += 6
			default:
				return span{}, s.syntax("invalid escape in string", i)
			}
		default: // control byte
			if !lax {
				return span{}, s.control(i)
			}
			sp.ctrl = true
			i++
		}
	}
	s.pos = len(data)
	return span{}, s.unexpected()
}

// hex4 returns the value of four hex digits, or -1.
func hex4(b []byte) rune {
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}

// text returns the content of a string span, unescaped. Lone surrogates
// become U+FFFD, as in encoding/json. The span must come from str.
func (s *scanner) text(sp span) []byte {
	b := s.data[sp.start:sp.end]
	if !sp.esc {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		c := b[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch e := b[i+1]; e {
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r := hex4(b[i+2:])
			i += 6
			if utf16.IsSurrogate(r) {
				r2 := rune(-1)
				if len(b)-i >= 6 && b[i] == '\\' && b[i+1] == 'u' {
					r2 = hex4(b[i+2:])
				}
				if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
					r = d
					i += 6
				} else {
					r = utf8.RuneError
				}
			}
			out = utf8.AppendRune(out, r)
			continue
		default: // '"', '\\', '/'
			out = append(out, e)
		}
		i += 2
	}
	return out
}

// keySet detects duplicate keys of one object.
type keySet struct {
	n     int
	small [12][]byte
	big   map[string]struct{}
}

// add records key and reports false when the object already has it.
func (k *keySet) add(key []byte) bool {
	if k.big == nil {
		for i := 0; i < k.n; i++ {
			if string(k.small[i]) == string(key) {
				return false
			}
		}
		if k.n < len(k.small) {
			k.small[k.n] = key
			k.n++
			return true
		}
		k.big = make(map[string]struct{}, 4*len(k.small))
		for _, kk := range k.small {
			k.big[string(kk)] = struct{}{}
		}
	}
	if _, dup := k.big[string(key)]; dup {
		return false
	}
	k.big[string(key)] = struct{}{}
	return true
}

// key scans an object key and the colon after it and returns the key,
// unescaped; a duplicate key is a pathed error naming it.
func (s *scanner) key(keys *keySet) ([]byte, *ValidationError) {
	if !s.peek('"') {
		return nil, s.unexpected()
	}
	sp, err := s.str(false)
	if err != nil {
		return nil, err
	}
	k := s.text(sp)
	if !keys.add(k) {
		s.pathed = true
		return nil, &ValidationError{Field: keySeg(k)(), Rule: ruleDup}
	}
	if !s.peek(':') {
		return nil, s.unexpected()
	}
	s.pos++
	return k, nil
}

// object scans an object at depth whose '{' is the current byte.
func (s *scanner) object(depth int) *ValidationError {
	if depth > MaxDepth {
		return s.tooDeep()
	}
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
		if _, err := s.value(depth, false); err != nil {
			return s.under(err, keySeg(k))
		}
		if done, err := s.next('}'); err != nil || done {
			return err
		}
	}
}

// array scans an array at depth whose '[' is the current byte.
func (s *scanner) array(depth int) *ValidationError {
	if depth > MaxDepth {
		return s.tooDeep()
	}
	s.pos++
	if s.peek(']') {
		s.pos++
		return nil
	}
	for i := 0; ; i++ {
		if _, err := s.value(depth, false); err != nil {
			return s.under(err, indexSeg(i))
		}
		if done, err := s.next(']'); err != nil || done {
			return err
		}
	}
}
