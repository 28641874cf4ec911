package fetch

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/segmentio/kafka-go"
)

// readAll reads the readers' partitions until ctx (the generation) ends:
// one fetch request at a time per leader broker for all the partitions it
// leads, answered as soon as one of them has records (MinBytes), where one
// Reader each would send a request per partition. When a request fails, or
// a partition's answer does, the leaders are looked up again.
func (g *Group) readAll(ctx context.Context, readers []*Reader, generation int64) {
	slices.SortFunc(readers, func(a, b *Reader) int {
		return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
	})
	opts := g.cfg.Fetch.withDefaults()
	client := &kafka.Client{Addr: opts.Addr, Transport: opts.Transport, Timeout: requestTimeout}
	failures := 0
	for ctx.Err() == nil {
		byLeader, err := leaders(ctx, client, readers)
		if err != nil {
			failures++
			g.readFailed(ctx, generation, opts, failures, err)
			if sleep(ctx, backoff(failures, opts.BackoffMin, opts.BackoffMax)) != nil {
				return
			}
			continue
		}
		failures = 0
		lctx, regroup := context.WithCancel(ctx)
		var wg sync.WaitGroup
		for _, rs := range byLeader {
			wg.Add(1)
			go func() {
				defer wg.Done()
				g.readLeader(lctx, opts, rs, generation, regroup)
			}()
		}
		wg.Wait()
		regroup()
	}
}

// leaders groups the readers by the broker leading their partition.
func leaders(ctx context.Context, client *kafka.Client, readers []*Reader) ([][]*Reader, error) {
	var topics []string
	for _, r := range readers {
		if !slices.Contains(topics, r.topic) {
			topics = append(topics, r.topic)
		}
	}
	md, err := client.Metadata(ctx, &kafka.MetadataRequest{Topics: topics})
	if err != nil {
		return nil, fmt.Errorf("look up the partition leaders: %w", err)
	}
	leader := map[string]map[int]int{}
	for _, t := range md.Topics {
		leader[t.Name] = map[int]int{}
		for _, p := range t.Partitions {
			if p.Error == nil {
				leader[t.Name][p.ID] = p.Leader.ID
			}
		}
	}
	at := map[int]int{}
	var out [][]*Reader
	for _, r := range readers {
		id, ok := leader[r.topic][r.partition]
		if !ok {
			return nil, fmt.Errorf("look up the partition leaders: no leader of %s/%d", r.topic, r.partition)
		}
		j, ok := at[id]
		if !ok {
			j = len(out)
			at[id] = j
			out = append(out, nil)
		}
		out[j] = append(out[j], r)
	}
	return out, nil
}

// readLeader reads the readers' partitions, which share a leader, with one
// request at a time until ctx ends, and calls regroup (and returns) when
// the request or a partition fails: the leaders may have moved. A
// partition whose offset lies past its end waits, out of the requests,
// as a Reader does.
func (g *Group) readLeader(ctx context.Context, opts Options, readers []*Reader, generation int64, regroup func()) {
	waitUntil := make([]time.Time, len(readers))
	failures := 0
	for ctx.Err() == nil {
		now := time.Now()
		var ready []*Reader
		var readyAt []int
		next := time.Time{}
		for i, r := range readers {
			if now.Before(waitUntil[i]) {
				if next.IsZero() || waitUntil[i].Before(next) {
					next = waitUntil[i]
				}
				continue
			}
			if r.offset < 0 {
				if err := r.resolve(ctx); err != nil {
					failures++
					g.readFailed(ctx, generation, opts, failures, err)
					waitUntil[i] = now.Add(backoff(failures, opts.BackoffMin, opts.BackoffMax))
					continue
				}
			}
			ready, readyAt = append(ready, r), append(readyAt, i)
		}
		if len(ready) == 0 {
			if sleep(ctx, time.Until(next)) != nil {
				return
			}
			continue
		}
		resp, err := roundTrip(ctx, opts, ready)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			g.readFailed(ctx, generation, opts, failures, fmt.Errorf("fetch %d partitions: %w", len(ready), err))
			if sleep(ctx, backoff(failures, opts.BackoffMin, opts.BackoffMax)) == nil {
				regroup()
			}
			return
		}
		moved := false
		for k, r := range ready {
			msgs, err := r.take(ctx, resp)
			switch {
			case errors.Is(err, errPastEnd):
				opts.logf("%s/%d: offset %d lies past the end of the partition; waiting for it", r.topic, r.partition, r.offset)
				waitUntil[readyAt[k]] = time.Now().Add(opts.BackoffMax)
			case err != nil:
				failures++
				g.readFailed(ctx, generation, opts, failures, fmt.Errorf("read %s/%d at offset %d: %w", r.topic, r.partition, r.offset, err))
				moved = true
			}
			for _, m := range msgs {
				select {
				case g.msgs <- delivery{generation: generation, msg: m}:
				case <-ctx.Done():
					return
				}
			}
		}
		if moved {
			if sleep(ctx, backoff(failures, opts.BackoffMin, opts.BackoffMax)) == nil {
				regroup()
			}
			return
		}
		failures = 0
	}
}

// readFailed logs a failure of the generation's reading, and passes it on to
// FetchMessage once Attempts of them came in a row (and again after as
// many more), as Reader.Next does.
func (g *Group) readFailed(ctx context.Context, generation int64, opts Options, failures int, err error) {
	if failures%opts.Attempts != 0 {
		opts.errorf("%v (attempt %d, retrying)", err, failures)
		return
	}
	select {
	case g.msgs <- delivery{generation: generation, err: err}:
	case <-ctx.Done():
	}
}
