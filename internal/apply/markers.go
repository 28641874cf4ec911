package apply

import (
	"crypto/sha256"
	"strconv"
	"strings"
	"sync"

	"projector/pkg/projections"
)

// Idempotency markers are kept by hour of event time, not by user: the
// markers of the events of one hour belong to one hour key
// px:seen:{<tag>}:<hour> (hours since the Unix epoch, UTC), so that a marker
// lives about as long as idempotency.window (its key expires a window after
// the later of the hour's end and its last write) and a user with few events
// costs no key of their own. The tag is "m" on a standalone server; on Redis
// Cluster it is the marker tag of the user's hash slot, so that the markers
// share the slot of the user's writes (one atomic call sets both). How the
// apply script spreads an hour's markers over shards and encodes their
// origins is its own (apply.lua, setMarkers).
//
// A marker's field is the first 8 bytes of its fingerprint, the SHA-256 of
// "<user>\x00<event id>"; the script routes by bytes 1-4 and 9-12 (so the
// fingerprint it is sent has 12). Two events of one hour share a field by
// chance with a probability of about n^2 / 2^65 for the n markers of a group
// of the hour's key (GROUP_MARKERS in apply.lua, about a million): the later
// event would count as a duplicate. At 10 billion events a day that is
// about one event in 5,000 years (docs/contract.md, section 10).

// fingerprintLen is the length of the fingerprint sent with a marker.
const fingerprintLen = 12

// fingerprint returns the marker fingerprint of an event of user.
func fingerprint(user, id string) string {
	h := sha256.New()
	h.Write([]byte(user))
	h.Write([]byte{0})
	h.Write([]byte(id))
	var sum [sha256.Size]byte
	return string(h.Sum(sum[:0])[:fingerprintLen])
}

// hourMs is an hour in Unix milliseconds.
const hourMs = 3_600_000

// markerNames names the hour keys of markers.
type markerNames struct {
	keys    projections.Keys
	cluster bool
}

// hour returns the hour key of the markers of user's events of hour.
func (m markerNames) hour(user string, hour int64) string {
	tag := "m"
	if m.cluster {
		tag = slotTags()[slotOf("u:"+user)]
	}
	return m.keys.Markers(tag, hour)
}

// slotTags returns, for each Redis Cluster hash slot, the marker tag that
// hashes to it: the first of s0, s1, ... (base 36) to do so.
var slotTags = sync.OnceValue(func() []string {
	tags := make([]string, 16384)
	left := len(tags)
	for i := 0; left > 0; i++ {
		t := "s" + strconv.FormatInt(int64(i), 36)
		if s := slotOf(t); tags[s] == "" {
			tags[s] = t
			left--
		}
	}
	return tags
})

// slotOf is the Redis Cluster hash slot of key: CRC16 (XMODEM) of its hash
// tag (the text between the first '{' and the next '}', when not empty), or
// of the whole key, modulo 16384.
func slotOf(key string) int {
	if s := strings.IndexByte(key, '{'); s >= 0 {
		if e := strings.IndexByte(key[s+1:], '}'); e > 0 {
			key = key[s+1 : s+1+e]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc % 16384)
}
