package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Ratio is the consumer's throughput over the naive baseline's.
func (r Result) Ratio() float64 { return ratio(r.Consumer.Rate, r.Naive) }

// ratio is a / b, or 0 when b is 0 (a phase left out).
func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// at returns the phase of lives at index i, or a zero Live.
func at(lives []Live, i int) Live {
	if i < len(lives) {
		return lives[i]
	}
	return Live{}
}

// Line is the benchmark's one-line summary: projector's backlog figures,
// the naive baseline, the replay, the latency at the first steady rate
// (p50, p99), then the peer's backlog throughput and the projector/peer
// ratios: Redis CPU per event at the first steady rate (live_redis_ratio)
// and in the backlog, consumer CPU per event in the backlog, backlog
// throughput (backlog_speedup), replay over projector's backlog
// throughput, and the p99 at the second steady rate (p99_20k). A ratio
// whose phase was left out is 0.
func (r Result) Line() string {
	ms := func(d time.Duration) string { return strconv.FormatFloat(float64(d.Microseconds())/1000, 'f', 1, 64) }
	lo, hi, peerLo := at(r.Live, 0), at(r.Live, 1), at(r.PeerLive, 0)
	return fmt.Sprintf("bench: consumer=%.0f ev/s naive=%.0f ev/s ratio=%.1f redis_cpu=%.2f/ev consumer_cpu=%.2f/ev replay=%.0f ev/s p50=%sms p99=%sms"+
		" peer=%.0f ev/s live_redis_ratio=%.2f backlog_redis_ratio=%.2f backlog_consumer_ratio=%.2f backlog_speedup=%.2f replay_ratio=%.2f p99_20k=%sms",
		r.Consumer.Rate, r.Naive, r.Ratio(), r.Consumer.RedisCPU, r.Consumer.ConsumerCPU, r.Replay,
		ms(lo.Latency.Quantile(0.5)), ms(lo.Latency.Quantile(0.99)),
		r.Peer.Rate, ratio(lo.RedisCPU, peerLo.RedisCPU), ratio(r.Consumer.RedisCPU, r.Peer.RedisCPU),
		ratio(r.Consumer.ConsumerCPU, r.Peer.ConsumerCPU), ratio(r.Consumer.Rate, r.Peer.Rate), ratio(r.Replay, r.Consumer.Rate),
		ms(hi.Latency.Quantile(0.99)))
}

// SummaryFields are the fields of Line, in order.
var SummaryFields = []string{"consumer", "naive", "ratio", "redis_cpu", "consumer_cpu", "replay", "p50", "p99",
	"peer", "live_redis_ratio", "backlog_redis_ratio", "backlog_consumer_ratio", "backlog_speedup", "replay_ratio", "p99_20k"}

// ParseLine reads a summary line (Line) into its numeric fields, units
// ("ev/s", "/ev", "ms") left out, so that runs can be compared by a script.
// Every field of SummaryFields must be present, in order, and numeric.
func ParseLine(line string) (map[string]float64, error) {
	rest, ok := strings.CutPrefix(line, "bench: ")
	if !ok {
		return nil, fmt.Errorf("summary %q: want the prefix \"bench: \"", line)
	}
	out := map[string]float64{}
	var order []string
	for _, tok := range strings.Fields(rest) {
		k, v, ok := strings.Cut(tok, "=")
		if !ok {
			if tok != "ev/s" {
				return nil, fmt.Errorf("summary: unexpected %q", tok)
			}
			continue
		}
		v = strings.TrimSuffix(strings.TrimSuffix(v, "/ev"), "ms")
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return nil, fmt.Errorf("summary field %s: %w", k, err)
		}
		out[k] = f
		order = append(order, k)
	}
	if !slices.Equal(order, SummaryFields) {
		return nil, fmt.Errorf("summary fields %v, want %v", order, SummaryFields)
	}
	return out, nil
}
