package bench

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
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

// rates returns the first and the second steady rate of the run's phases (0: none).
func (r Result) rates() (lo, hi int) {
	for _, l := range r.Live {
		switch {
		case lo == 0:
			lo = l.Rate
		case hi == 0 && l.Rate != lo:
			hi = l.Rate
		}
	}
	return lo, hi
}

// atRate returns the phases of lives at rate, one per round, in order.
func atRate(lives []Live, rate int) []Live {
	var out []Live
	for _, l := range lives {
		if rate != 0 && l.Rate == rate {
			out = append(out, l)
		}
	}
	return out
}

// median returns the median of xs (the mean of the middle two of an even
// count), or 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	if n := len(s); n%2 == 0 {
		return (s[n/2-1] + s[n/2]) / 2
	}
	return s[len(s)/2]
}

// quantileMs returns the median over lives of their latency quantile q, in ms.
func quantileMs(lives []Live, q float64) float64 {
	xs := make([]float64, len(lives))
	for i, l := range lives {
		xs[i] = float64(l.Latency.Quantile(q).Microseconds()) / 1000
	}
	return median(xs)
}

// redisRatio returns the median over the rounds of projector's Redis CPU per
// event over the peer's in the same round.
func redisRatio(own, peer []Live) float64 {
	xs := make([]float64, min(len(own), len(peer)))
	for i := range xs {
		xs[i] = ratio(own[i].RedisCPU, peer[i].RedisCPU)
	}
	return median(xs)
}

// share returns the broker-share window of reader at rate in round
// (false: none).
func (r Result) share(reader string, rate, round int) (BrokerShare, bool) {
	for _, s := range r.Shares {
		if s.Reader == reader && s.Rate == rate && s.Round == round {
			return s, true
		}
	}
	return BrokerShare{}, false
}

// over returns what window s adds, by the figure f, to the load
// generator's alone at its rate in its round (false without that window).
func (r Result) over(s BrokerShare, f func(BrokerShare) float64) (float64, bool) {
	none, ok := r.share(ReaderNone, s.Rate, s.Round)
	if !ok {
		return 0, false
	}
	return f(s) - f(none), true
}

// Caused is the broker CPU per event that window s's reader caused: its
// CPU minus the load generator's alone at its rate in its round (0 without
// that window).
func (r Result) Caused(s BrokerShare) float64 {
	x, _ := r.over(s, func(s BrokerShare) float64 { return s.BrokerCPU })
	return x
}

// overAlone returns the median over the rounds of what reader's window at
// rate adds to the load generator's alone in the same round, by the figure
// f (0 without such pairs).
func (r Result) overAlone(reader string, rate int, f func(BrokerShare) float64) float64 {
	var xs []float64
	for _, s := range r.Shares {
		if s.Reader != reader || s.Rate != rate {
			continue
		}
		if x, ok := r.over(s, f); ok {
			xs = append(xs, x)
		}
	}
	if len(xs) == 0 {
		return 0
	}
	return median(xs)
}

// BrokerCaused returns the broker CPU per event that reader causes at rate:
// the median over the rounds of its window's minus the load generator's
// alone (0 without both windows).
func (r Result) BrokerCaused(reader string, rate int) float64 {
	return r.overAlone(reader, rate, func(s BrokerShare) float64 { return s.BrokerCPU })
}

// fetches returns the fetch requests per second of reader's windows at
// rate beyond the load generator's alone, the median over the rounds (0
// without both windows).
func (r Result) fetches(reader string, rate int) float64 {
	return r.overAlone(reader, rate, func(s BrokerShare) float64 { return s.Fetches })
}

// LiveTotal returns a consumer's whole live cost per event at rate: the
// median over the rounds of its Redis and its own CPU per event, plus the
// broker CPU it causes (BrokerCaused).
func (r Result) LiveTotal(reader string, rate int) float64 {
	lives := atRate(r.Live, rate)
	if reader == ReaderPeer {
		lives = atRate(r.PeerLive, rate)
	}
	if len(lives) == 0 {
		return 0
	}
	xs := make([]float64, len(lives))
	for i, l := range lives {
		xs[i] = l.RedisCPU + l.ConsumerCPU
	}
	return median(xs) + r.BrokerCaused(reader, rate)
}

// Line is the benchmark's one-line summary: projector's backlog figures,
// the naive baseline, the replay, the latency at the first steady rate
// (p50, p99), then the peer's backlog throughput and the projector/peer
// ratios: Redis CPU per event at the first steady rate (live_redis_ratio)
// and in the backlog, consumer CPU per event in the backlog, backlog
// throughput (backlog_speedup), replay over projector's backlog
// throughput, and the p99 at the second steady rate (p99_20k). With several
// rounds of steady-rate phases (Config.LiveRounds) the latencies and
// live_redis_ratio are medians over the rounds, each round's ratio from the
// two consumers' phases of that round. Then, from the broker-share phase at
// the first steady rate: the broker CPU per event projector's consumer and
// the Java console consumer cause (broker_consumer, broker_java), the fetch
// requests per second they add (fetch_consumer, fetch_java), and the whole
// live cost per event, Redis + consumer + broker, of projector over the
// peer's (live_total_ratio). A figure whose phase was left out is 0.
func (r Result) Line() string {
	ms := func(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
	loRate, hiRate := r.rates()
	lo, hi, peerLo := atRate(r.Live, loRate), atRate(r.Live, hiRate), atRate(r.PeerLive, loRate)
	return fmt.Sprintf("bench: consumer=%.0f ev/s naive=%.0f ev/s ratio=%.1f redis_cpu=%.2f/ev consumer_cpu=%.2f/ev replay=%.0f ev/s p50=%sms p99=%sms"+
		" peer=%.0f ev/s live_redis_ratio=%.2f backlog_redis_ratio=%.2f backlog_consumer_ratio=%.2f backlog_speedup=%.2f replay_ratio=%.2f p99_20k=%sms"+
		" broker_consumer=%.2f/ev broker_java=%.2f/ev fetch_consumer=%.0f fetch_java=%.0f live_total_ratio=%.2f",
		r.Consumer.Rate, r.Naive, r.Ratio(), r.Consumer.RedisCPU, r.Consumer.ConsumerCPU, r.Replay,
		ms(quantileMs(lo, 0.5)), ms(quantileMs(lo, 0.99)),
		r.Peer.Rate, redisRatio(lo, peerLo), ratio(r.Consumer.RedisCPU, r.Peer.RedisCPU),
		ratio(r.Consumer.ConsumerCPU, r.Peer.ConsumerCPU), ratio(r.Consumer.Rate, r.Peer.Rate), ratio(r.Replay, r.Consumer.Rate),
		ms(quantileMs(hi, 0.99)),
		r.BrokerCaused(ReaderConsumer, loRate), r.BrokerCaused(ReaderJava, loRate), r.fetches(ReaderConsumer, loRate), r.fetches(ReaderJava, loRate),
		ratio(r.LiveTotal(ReaderConsumer, loRate), r.LiveTotal(ReaderPeer, loRate)))
}

// SummaryFields are the fields of Line, in order.
var SummaryFields = []string{"consumer", "naive", "ratio", "redis_cpu", "consumer_cpu", "replay", "p50", "p99",
	"peer", "live_redis_ratio", "backlog_redis_ratio", "backlog_consumer_ratio", "backlog_speedup", "replay_ratio", "p99_20k",
	"broker_consumer", "broker_java", "fetch_consumer", "fetch_java", "live_total_ratio"}

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
