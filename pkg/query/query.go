// Package query reads the projections of docs/contract.md section 4 for web services:
// last viewed, history pages, stats series, bestsellers (today and the last
// 7 days), most viewed today, recent orders, a customer's orders,
// trending products, and where a product stands in a ranking (Rank). Key names come from projections.Keys and calendar
// buckets from projections.BucketsOf, so reads match what the consumer
// writes for the same redis.key_prefix and time_zone.
//
// Every read is bounded (page sizes, ranges, LIMIT) and ignores dead entries
// (docs/contract.md section 4: an entry whose ts + retention is not in the future). The
// clock is injected (Options.Now) so results are deterministic in tests.
//
// Rankings that must page without drift are read from snapshots built in
// Redis under per-build keys in the {g} slot (see snapshot.go).
package query

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

// Options configure a Reader. They must match the consumer's configuration.
type Options struct {
	// KeyPrefix is redis.key_prefix.
	KeyPrefix string
	// Location is time_zone loaded; nil means UTC.
	Location *time.Location
	// Projections is the projections.* configuration (sizes, retentions,
	// enabled projections, history scope, stats granularities).
	Projections projections.Config
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Replica, when not nil, serves the reads (redis.read_from: replicas):
	// a client whose commands go to a replica (a Sentinel failover client
	// with ReplicaOnly), or a *redis.ClusterClient with ReadOnly, whose
	// replica of each key's slot is asked. Snapshots are built, and reads a
	// replica cannot answer are made, through the client New is given
	// (replica.go). Reads then lag the master by the replication delay.
	Replica redis.UniversalClient
}

// Reader runs the read patterns against one Redis (standalone or cluster).
// It is safe for concurrent use.
type Reader struct {
	rdb     redis.UniversalClient
	replica redis.UniversalClient // nil: every read on rdb
	keys    projections.Keys
	loc     *time.Location
	cfg     projections.Config
	now     func() time.Time
	// rank holds what Rank learns once and reuses (see rank.go).
	rank *rankState
}

// New returns a Reader over rdb: the master (or the masters of a Redis
// Cluster), where snapshots are built and, without Options.Replica, every
// read goes.
func New(rdb redis.UniversalClient, opts Options) *Reader {
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Reader{rdb: rdb, replica: opts.Replica, keys: projections.Keys{Prefix: opts.KeyPrefix}, loc: opts.Location,
		cfg: opts.Projections, now: opts.Now, rank: &rankState{last: map[Ranking]snapshot{}}}
}

// InputError is a bad argument: the caller should answer 400 with Error().
type InputError struct {
	// Param names the argument, e.g. "size".
	Param string
	// Problem says what is wrong with it.
	Problem string
}

// Error returns "<param>: <problem>".
func (e *InputError) Error() string { return e.Param + ": " + e.Problem }

// badInput returns an *InputError.
func badInput(param, format string, args ...any) error {
	return &InputError{Param: param, Problem: fmt.Sprintf(format, args...)}
}

// ErrDisabled wraps the error for a read of a projection that is switched off.
var ErrDisabled = errors.New("projection is switched off")

// ErrCursorExpired is returned for a cursor whose snapshot no longer exists:
// the caller should start again from the first page.
var ErrCursorExpired = errors.New("cursor expired: its snapshot is gone, start again from the first page")

// disabled returns an error wrapping ErrDisabled for projection name.
func disabled(name string) error { return fmt.Errorf("%s: %w", name, ErrDisabled) }

// nowMs is the injected clock in Unix milliseconds.
func (r *Reader) nowMs() int64 { return r.now().UnixMilli() }

// aliveFrom is the exclusive lower score bound of live entries: an entry is
// dead when ts + retention <= now (docs/contract.md section 4, precise rules).
func (r *Reader) aliveFrom(retention time.Duration) string {
	return "(" + strconv.FormatInt(r.nowMs()-retention.Milliseconds(), 10)
}

// today is the current calendar day in the configured time zone.
func (r *Reader) today() string {
	return projections.BucketsOf(r.nowMs(), r.loc).Day
}

// newID returns a random identifier for one snapshot build.
func newID() string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// checkPage validates rank paging arguments.
func checkPage(page, size int) error {
	if size < 1 || size > MaxPageSize {
		return badInput("size", "must be in 1..%d (got %d)", MaxPageSize, size)
	}
	if page < 1 || page > MaxPage {
		return badInput("page", "must be in 1..%d (got %d)", MaxPage, page)
	}
	return nil
}

// Bounds of paging arguments.
const (
	// MaxPageSize is the largest page.
	MaxPageSize = 100
	// MaxPage is the highest page number (bounds LIMIT offsets).
	MaxPage = 1000
)

// window reads the entries of the ZSET key with score > from (an exclusive
// bound such as aliveFrom returns), newest first, from 0-based position
// offset (count of them; count 0 reads none), with their number, in one
// MULTI.
func (r *Reader) window(ctx context.Context, key, from string, offset, count int64) (int64, []redis.Z, error) {
	var total *redis.IntCmd
	var rng *redis.ZSliceCmd
	if err := r.read(ctx, key, func(c redis.Cmdable, _ bool) error {
		rng = nil
		_, err := c.TxPipelined(ctx, func(p redis.Pipeliner) error {
			total = p.ZCount(ctx, key, from, "+inf")
			if count > 0 {
				rng = p.ZRangeArgsWithScores(ctx, redis.ZRangeArgs{Key: key, Start: "+inf", Stop: from, ByScore: true, Rev: true,
					Offset: offset, Count: count})
			}
			return nil
		})
		return err
	}); err != nil {
		return 0, nil, fmt.Errorf("read %s: %w", key, err)
	}
	if rng == nil {
		return total.Val(), nil, nil
	}
	return total.Val(), rng.Val(), nil
}
