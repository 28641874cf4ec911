package query

import (
	"encoding/base64"
	"encoding/json"
	"regexp"
)

// Cursor is the position after the last entry of a page: the snapshot it
// belongs to and the (score, member) of that entry. Pages continue in the
// snapshot's order: score descending, members of equal score in descending
// byte order (Redis's ZRANGE REV order).
type Cursor struct {
	Name    string  `json:"n"`
	Version string  `json:"v"`
	Score   float64 `json:"s"`
	Member  string  `json:"m"`
}

// MaxCursorLen bounds an encoded cursor.
const MaxCursorLen = 512

// Encode returns the cursor as an opaque URL-safe token.
func (c Cursor) Encode() string {
	b, _ := json.Marshal(c)
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a token made by Encode.
func DecodeCursor(token string) (Cursor, error) {
	if len(token) > MaxCursorLen {
		return Cursor{}, badInput("cursor", "longer than %d bytes", MaxCursorLen)
	}
	b, err := base64.RawURLEncoding.DecodeString(token)
	var c Cursor
	if err == nil {
		err = json.Unmarshal(b, &c)
	}
	if err != nil || !cursorName.MatchString(c.Name) || !cursorVersion.MatchString(c.Version) || c.Member == "" {
		return Cursor{}, badInput("cursor", "not a cursor returned by this API")
	}
	return c, nil
}

// The shapes of the snapshot name and version a cursor may carry.
var (
	cursorName    = regexp.MustCompile(`^[a-z0-9]+:[0-9]{4}-[0-9]{2}-[0-9]{2}$`)
	cursorVersion = regexp.MustCompile(`^[0-9a-z]+-[0-9a-f]{12}$`)
)
