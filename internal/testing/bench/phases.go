package bench

import (
	"context"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// phases runs the measured phases on the loaded log, in this order: the
// peer's backlog; projector's backlog and its steady-rate phases (on an
// emptied Redis); the replay; the peer again, first catching up with the
// traffic produced meanwhile, then its steady-rate phases (on the state the
// replay rebuilt); with LiveRounds, more rounds of both consumers'
// steady-rate phases; the broker-share phase; the naive baseline, which
// empties Redis. Both backlogs read the same records, one right after the
// other.
func (e *env) phases(ctx context.Context, p *kgo.Client, res *Result) error {
	peer := len(e.cfg.PeerCommand) > 0
	var err error
	if peer {
		if res.Peer, err = e.runBacklog(ctx, e.startPeer, nil, p); err != nil {
			return err
		}
		if err := e.redis.FlushAll(ctx); err != nil {
			return err
		}
	}
	if res.Consumer, err = e.runBacklog(ctx, e.startConsumer, &res.Live, p); err != nil {
		return err
	}
	if !e.cfg.SkipReplay {
		if res.Replay, err = e.runReplays(ctx); err != nil {
			return err
		}
	}
	if peer && e.cfg.Latency.Rate > 0 {
		if err := e.runLive(ctx, e.startPeer, &res.PeerLive, p); err != nil {
			return err
		}
	}
	for round := 2; round <= e.cfg.LiveRounds && e.cfg.Latency.Rate > 0; round++ {
		e.round = round
		e.logf("steady-rate round %d of %d", round, e.cfg.LiveRounds)
		if err := e.runLive(ctx, e.startConsumer, &res.Live, p); err != nil {
			return err
		}
		if peer {
			if err := e.runLive(ctx, e.startPeer, &res.PeerLive, p); err != nil {
				return err
			}
		}
	}
	if !e.cfg.SkipBrokerShares && e.cfg.Latency.Rate > 0 {
		if res.Shares, err = e.brokerShares(ctx, p); err != nil {
			return err
		}
	}
	if e.cfg.NaiveEvents > 0 { // last: it empties Redis
		if res.Naive, res.NaiveCmds, err = e.runNaive(ctx); err != nil {
			return err
		}
	}
	return nil
}

// runBacklog starts a member over the loaded log with fresh commandstats,
// measures its backlog, then, when lives is not nil, its steady-rate phases,
// and stops it.
func (e *env) runBacklog(ctx context.Context, start func() (*member, error), lives *[]Live, p *kgo.Client) (Throughput, error) {
	if err := e.redis.ResetStats(ctx); err != nil {
		return Throughput{}, err
	}
	m, err := start()
	if err != nil {
		return Throughput{}, err
	}
	defer e.stop(m)
	th, err := e.backlog(ctx, m)
	if err != nil || lives == nil {
		return th, err
	}
	return th, e.liveRates(ctx, m, lives, p)
}

// runLive starts a member whose group is behind the log, waits until it has
// caught up, runs its steady-rate phases and stops it.
func (e *env) runLive(ctx context.Context, start func() (*member, error), lives *[]Live, p *kgo.Client) error {
	m, err := start()
	if err != nil {
		return err
	}
	defer e.stop(m)
	e.logf("%s: catching up with the log", m.name)
	if err := e.waitLag(ctx, m, 5*time.Minute); err != nil {
		return err
	}
	return e.liveRates(ctx, m, lives, p)
}

// liveRates runs the steady-rate phases of a caught-up member.
func (e *env) liveRates(ctx context.Context, m *member, lives *[]Live, p *kgo.Client) error {
	if e.cfg.Latency.Rate <= 0 {
		return nil
	}
	for _, rate := range []int{e.cfg.Latency.Rate, e.cfg.HighRate} {
		if rate <= 0 {
			continue
		}
		l, err := e.live(ctx, m, p, rate)
		if err != nil {
			return err
		}
		*lives = append(*lives, l)
	}
	return nil
}
