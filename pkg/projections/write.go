package projections

// Kind is a Redis write primitive that a projection asks for. The applier
// turns writes into Redis commands; projections never talk to Redis.
type Kind uint8

// The write primitives. Times are Unix milliseconds; ExpireAt 0 means "no expiry".
// Every expiry only moves later: the applier sets it when the key has none or an
// earlier one.
const (
	// IncrBy adds Delta to the integer string at Key.
	IncrBy Kind = iota + 1
	// ZIncrBy adds Delta to Member's score in the sorted set at Key.
	ZIncrBy
	// ZAddMax sets Member's score to max(current, Score) (ZADD GT), unless Guard
	// names a key whose integer value is >= Score. Afterwards the set is trimmed
	// per Trim, and its expiry moved to ExpireAt (newest ts + TTL).
	ZAddMax
	// SetValue stores Value at Key (a deterministic document).
	SetValue
	// SetMax stores max(current, Score) as an integer string at Key.
	SetMax
	// ZRemUpTo removes members with score <= Score from Key, or from every key
	// listed in the set Registry when Registry is not empty.
	ZRemUpTo
	// ZRemMemberUpTo removes Member from Key if its score is <= Score.
	ZRemMemberUpTo
	// ZRemPrefixUpTo removes members that are Member followed by a 10-byte day
	// (history entries `<product>@<day>`, Member being `<product>@`) whose score is <= Score
	// from Key, or from every key listed in the set Registry when it is not empty.
	ZRemPrefixUpTo
	// SAdd adds Member to the set at Key (a registry of a user's scoped keys).
	SAdd
)

// String names the kind (for logs and tests).
func (k Kind) String() string {
	switch k {
	case IncrBy:
		return "INCRBY"
	case ZIncrBy:
		return "ZINCRBY"
	case ZAddMax:
		return "ZADDMAX"
	case SetValue:
		return "SETVALUE"
	case SetMax:
		return "SETMAX"
	case ZRemUpTo:
		return "ZREMUPTO"
	case ZRemMemberUpTo:
		return "ZREMMEMBERUPTO"
	case ZRemPrefixUpTo:
		return "ZREMPREFIXUPTO"
	case SAdd:
		return "SADD"
	}
	return "UNKNOWN"
}

// Barrier reports whether a write removes or guards state, so that writes of the
// same slot group may not be reordered or merged across it.
func (k Kind) Barrier() bool {
	switch k {
	case SetMax, ZRemUpTo, ZRemMemberUpTo, ZRemPrefixUpTo:
		return true
	}
	return false
}

// Trim bounds a sorted set written with ZAddMax.
type Trim struct {
	// Keep is how many highest-scored members stay (0: no limit).
	Keep int
	// RetentionMs removes members scored below newest - RetentionMs.
	RetentionMs int64
}

// Write is one Redis effect of one event. Global writes go to the `{g}` hash
// slot; the others to the event user's `{u:<user>}` slot.
type Write struct {
	Kind     Kind
	Global   bool
	Key      string
	Member   string
	Delta    int64
	Score    int64
	Value    string
	ExpireAt int64
	Trim     Trim
	Guard    string
	Registry string
	// Projection names the projection that asked for the write.
	Projection string
}
