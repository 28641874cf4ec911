package query

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Reads from replicas (Options.Replica). A read goes to a replica of its
// key's slot: the Replica client itself (a Sentinel failover client with
// ReplicaOnly, whose connections go to replicas the Sentinels list, or to
// the master when they list none), or, when Replica is a
// *redis.ClusterClient (ReadOnly), the replica of the key's slot it picks.
// Every read of one call goes there as one command, one pipeline or one
// MULTI, so a page's total and entries come from one state of that
// replica. The read is made again on the master (the Reader's client) when
// the replica cannot answer it: no connection, a timeout, a replica still
// loading or without its master (MASTERDOWN, replica-serve-stale-data no),
// a cluster replica that does not serve the slot (MOVED, or a MULTI it
// aborts), or a snapshot the replica does not hold yet (the build went to
// the master a moment ago).
// Snapshots are built on the master.

// errNotReplicated says a snapshot a read needs is missing on the replica:
// it may not have been replicated yet, so the master is asked.
var errNotReplicated = errors.New("snapshot not on the replica")

// read runs f on the replica of key's slot (replica true), and again on the
// master (replica false) when the replica cannot answer (see above); with
// no Replica configured, on the master only. f sets its results anew on
// every run.
func (r *Reader) read(ctx context.Context, key string, f func(c redis.Cmdable, replica bool) error) error {
	if r.replica == nil {
		return f(r.rdb, false)
	}
	c, err := r.replicaFor(ctx, key)
	if err == nil {
		if err = f(c, true); err == nil || !replicaUnfit(ctx, err) {
			return err
		}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("read %s from a replica: %w", key, errors.Join(err, ctx.Err()))
	}
	return f(r.rdb, false)
}

// replicaFor returns the client of a replica that serves key.
func (r *Reader) replicaFor(ctx context.Context, key string) (redis.Cmdable, error) {
	if cc, ok := r.replica.(*redis.ClusterClient); ok {
		c, err := cc.SlaveForKey(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("find a replica of %s: %w", key, err)
		}
		return c, nil
	}
	return r.replica, nil
}

// replicaUnfit reports whether err, from a read on a replica, means the
// master must be asked instead: anything but an answer of the server
// (redis.Nil and errors about the data pass through), or an answer saying
// the replica cannot serve the read (also inside a MULTI, which the
// replica then aborts: EXECABORT). A context that ended is no reason.
func replicaUnfit(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	if errors.Is(err, errNotReplicated) {
		return true
	}
	var re redis.Error
	if !errors.As(err, &re) {
		return true
	}
	if _, moved := redis.IsMovedError(err); moved || redis.IsExecAbortError(err) {
		return true
	}
	return redis.HasErrorPrefix(err, "LOADING") || redis.HasErrorPrefix(err, "MASTERDOWN") ||
		redis.HasErrorPrefix(err, "CLUSTERDOWN") || redis.HasErrorPrefix(err, "TRYAGAIN")
}
