// Package gen generates deterministic, realistic shop traffic for projector:
// views, clicks, orders and history events (docs/contract.md section 2), with duplicate
// publications, out-of-order event times and poison records mixed in.
//
// The embedded demo streams records with Next (event times near the clock it
// passes in); tests take a whole log with Log (event times spread over
// [Config.Start, Config.Start+Config.Span]). A Generator is not safe for
// concurrent use.
package gen

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"time"
)

// Record is one Kafka record the generator produced.
type Record struct {
	// Topic is the topic the record belongs on.
	Topic string
	// Key is the record key: the user id (poison records may have an empty key).
	Key []byte
	// Value is the record value: event JSON, or broken bytes for poison.
	Value []byte
	// Poison reports that the generator made the record invalid on purpose.
	Poison bool
	// Reason says why a poison record is invalid (empty for valid records).
	Reason string
	// ID is the event id; empty for poison records without a valid id.
	ID string
	// OtherPartition asks the producer to publish this duplicate in another
	// partition than the one its key hashes to (Config.MoveDupRate).
	OtherPartition bool
}

// Event mix (shares of valid fresh events; views take the rest).
const (
	clickRate = 0.12
	orderRate = 0.08
)

// Shape of the traffic.
const (
	minTS            = 946684800000  // 2000-01-01, the smallest valid ts
	maxTS            = 4102444800000 // 2100-01-01, the first invalid ts
	maxBackInTime    = 3 * time.Hour // out-of-order events go back at most this far
	tieRate          = 0.01          // events that repeat the user's newest ts exactly
	boundaryRate     = 0.02          // Log events snapped onto an hour boundary (or 1 ms before)
	repeatViewRate   = 0.3           // views of a product the user viewed recently
	recentViewsKept  = 20            // per-user recently viewed products remembered
	dupWindowRecords = 300           // duplicates re-publish one of the last this many records
	dupMaxAge        = 12 * time.Hour
	extraFieldRate   = 0.05 // valid events carrying an unknown extra field
	mapEncodingRate  = 0.1  // valid events encoded with sorted keys instead of struct order
	indentRate       = 0.02 // valid events pretty-printed
	zeroPriceRate    = 0.05 // order items with price 0
	emptyPoisonKey   = 0.1  // poison records with an empty key
	streamJitter     = time.Second
)

// sent is a valid record remembered as a duplicate candidate.
type sent struct {
	rec Record
	ts  int64
}

// Generator produces records. Create it with New.
type Generator struct {
	cfg      Config
	rng      *rand.Rand
	products *rand.Zipf
	users    *rand.Zipf
	userIDs  []string
	prodIDs  []string
	seq      uint64
	lastTS   map[string]int64    // per user: newest in-order ts emitted
	viewed   map[string][]string // per user: recently viewed products
	recent   []sent              // ring of the last dupWindowRecords valid records
	recentAt int
}

// New returns a Generator for cfg; zero sizes, times and topics take their
// DefaultConfig values.
func New(cfg Config) *Generator {
	cfg = cfg.withDefaults()
	rng := rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15))
	return &Generator{
		cfg:      cfg,
		rng:      rng,
		products: rand.NewZipf(rng, 1.1, 4, uint64(cfg.Products-1)),
		users:    rand.NewZipf(rng, 1.05, 10, uint64(cfg.Users-1)),
		userIDs:  userNames(cfg.Users),
		prodIDs:  productNames(cfg.Products),
		lastTS:   make(map[string]int64),
		viewed:   make(map[string][]string),
	}
}

// Next returns one record whose event time lies within a second before now
// (or up to a few hours before, for out-of-order events).
func (g *Generator) Next(now time.Time) Record {
	width := streamJitter.Milliseconds()
	return g.emit(now.UnixMilli()-width, width, false)
}

// Log returns n records whose event times spread over [Start, Start+Span],
// increasing per user except for out-of-order events and a few events
// snapped onto hour boundaries.
func (g *Generator) Log(n int) []Record {
	out := make([]Record, 0, n)
	start := g.cfg.Start.UnixMilli()
	span := g.cfg.Span.Milliseconds()
	step := max(span/int64(max(n, 1)), 1)
	for i := range n {
		base := start + span*int64(i)/int64(n)
		width := min(step, start+span-base+1)
		out = append(out, g.emit(base, width, true))
	}
	return out
}

// emit produces the next record for a base time window [lo, lo+width).
func (g *Generator) emit(lo, width int64, snap bool) Record {
	u := g.rng.Float64()
	switch {
	case u < g.cfg.PoisonRate:
		return g.poison(lo + g.rng.Int64N(width))
	case u < g.cfg.PoisonRate+g.cfg.DupRate:
		if rec, ok := g.duplicate(lo); ok {
			return rec
		}
	}
	rec, ts := g.fresh(lo, width, snap)
	g.remember(rec, ts)
	return rec
}

// nextID returns a fresh unique event id.
func (g *Generator) nextID() string {
	g.seq++
	if g.cfg.UUIDs {
		return uuidOf(g.cfg.Seed, g.seq)
	}
	return fmt.Sprintf("ev-%d-%d", g.cfg.Seed, g.seq)
}

// uuidOf returns the version-4-shaped UUID of the seed and sequence number
// (not drawn from the generator's random stream, which stays as it is).
func uuidOf(seed, seq uint64) string {
	h := sha256.Sum256(binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(nil, seed), seq))
	h[6] = h[6]&0x0f | 0x40 // version 4
	h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
	x := hex.EncodeToString(h[:16])
	return x[0:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// pickUser returns a user id: half uniform, half skewed to a few heavy users.
func (g *Generator) pickUser() string {
	if g.rng.IntN(2) == 0 {
		return g.userIDs[g.rng.IntN(len(g.userIDs))]
	}
	return g.userIDs[g.users.Uint64()]
}

// pickProduct returns a product id with Zipf popularity.
func (g *Generator) pickProduct() string {
	return g.prodIDs[g.products.Uint64()]
}

// eventTS returns the ts of a fresh event of user in the window [lo, lo+width).
func (g *Generator) eventTS(user string, lo, width int64, snap bool) int64 {
	last, seen := g.lastTS[user]
	if g.cfg.BackfillRate > 0 && g.rng.Float64() < g.cfg.BackfillRate {
		day := 24 * time.Hour.Milliseconds()
		return clampTS(lo - 9*day - g.rng.Int64N(31*day)) // the user's newest stays
	}
	r := g.rng.Float64()
	var ts int64
	switch {
	case seen && r < g.cfg.OutOfOrderRate:
		ts = last - 1 - g.rng.Int64N(maxBackInTime.Milliseconds())
		return clampTS(ts) // out of order: the user's newest stays
	case seen && r < g.cfg.OutOfOrderRate+tieRate:
		ts = last
	default:
		ts = max(lo+g.rng.Int64N(width), last)
		if snap && g.rng.Float64() < boundaryRate {
			hour := time.Hour.Milliseconds()
			ts = (ts+hour/2)/hour*hour - g.rng.Int64N(2)
		}
	}
	ts = clampTS(ts)
	g.lastTS[user] = max(last, ts)
	return ts
}

// clampTS keeps ts inside the valid range of docs/contract.md section 2.
func clampTS(ts int64) int64 {
	return min(max(ts, minTS), maxTS-1)
}

// duplicate re-publishes a recent valid record whose ts is within dupMaxAge
// of base, if one is found.
func (g *Generator) duplicate(base int64) (Record, bool) {
	if len(g.recent) == 0 {
		return Record{}, false
	}
	for range 4 {
		s := g.recent[g.rng.IntN(len(g.recent))]
		if d := s.ts - base; d > dupMaxAge.Milliseconds() || -d > dupMaxAge.Milliseconds() {
			continue
		}
		rec := s.rec
		rec.Key = append([]byte(nil), rec.Key...)
		rec.Value = append([]byte(nil), rec.Value...)
		if g.cfg.MoveDupRate > 0 && rec.Topic != g.cfg.ViewsTopic {
			rec.OtherPartition = g.rng.Float64() < g.cfg.MoveDupRate
		}
		return rec, true
	}
	return Record{}, false
}

// remember adds a valid record to the duplicate candidates.
func (g *Generator) remember(rec Record, ts int64) {
	if len(g.recent) < dupWindowRecords {
		g.recent = append(g.recent, sent{rec: rec, ts: ts})
		return
	}
	g.recent[g.recentAt] = sent{rec: rec, ts: ts}
	g.recentAt = (g.recentAt + 1) % dupWindowRecords
}
