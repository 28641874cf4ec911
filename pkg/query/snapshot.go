package query

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// A snapshot is an immutable copy of a ranking, built in Redis so pages read
// from it never drift. Keys (all in the {g} slot, so a build goes to one node
// on Redis Cluster too):
//
//	snap:{g}:<name>            string: the current version, expires after spec.fresh
//	snap:{g}:<name>:<version>  ZSET: the snapshot, expires after spec.keep
//	snap:{g}:<name>:<version>:tmp:<n>  the build's temporary keys
//
// A build computes into its own temporary keys (the version is unique per
// build: build time in ms and a random suffix), RENAMEs the result onto its
// versioned key and then points snap:{g}:<name> at it. Concurrent builds
// therefore never clobber each other: each cursor keeps reading the version
// it started on until that version expires, even after a newer build became
// current. The build is one pipeline, not a transaction, so other clients'
// commands run between its steps (Redis is never blocked for the whole
// build); its temporary keys expire after buildTTL should it stop halfway.
type snapSpec struct {
	name  string        // e.g. best7:2026-12-02
	fresh time.Duration // how long a build stays current
	keep  time.Duration // how long a build stays readable (>= fresh)
	// build queues the commands that fill dst, using tmp(n) for scratch keys.
	build func(ctx context.Context, p redis.Pipeliner, dst string, tmp func(n int) string)
}

// snapshot is one readable build.
type snapshot struct {
	name, version string
	key           string // the versioned ZSET
	builtMs       int64
}

// snapPointer is snap:{g}:<name>.
func (r *Reader) snapPointer(name string) string { return r.keys.Global("snap") + ":" + name }

// snapAt returns the snapshot of name at version.
func (r *Reader) snapAt(name, version string) snapshot {
	built, _ := strconv.ParseInt(strings.SplitN(version, "-", 2)[0], 36, 64)
	return snapshot{name: name, version: version, key: r.snapPointer(name) + ":" + version, builtMs: built}
}

// current returns the current build of spec, building it when there is none
// (on the master: a replica without the pointer may lag it).
func (r *Reader) current(ctx context.Context, spec snapSpec) (snapshot, error) {
	ptr := r.snapPointer(spec.name)
	var v string
	err := r.read(ctx, ptr, func(c redis.Cmdable, replica bool) error {
		var err error
		v, err = c.Get(ctx, ptr).Result()
		if replica && errors.Is(err, redis.Nil) {
			return errNotReplicated
		}
		return err
	})
	if err == nil {
		return r.snapAt(spec.name, v), nil
	}
	if !errors.Is(err, redis.Nil) {
		return snapshot{}, fmt.Errorf("read %s: %w", ptr, err)
	}
	return r.build(ctx, spec)
}

// build makes a new version of spec and makes it current.
func (r *Reader) build(ctx context.Context, spec snapSpec) (snapshot, error) {
	s := r.snapAt(spec.name, strconv.FormatInt(r.nowMs(), 36)+"-"+newID())
	out := s.key + ":tmp:out"
	var tmps []string
	tmp := func(n int) string {
		k := s.key + ":tmp:" + strconv.Itoa(n)
		tmps = append(tmps, k)
		return k
	}
	var rename *redis.StatusCmd
	cmds, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		spec.build(ctx, p, out, tmp)
		p.PExpire(ctx, out, buildTTL)
		rename = p.Rename(ctx, out, s.key)
		p.PExpire(ctx, s.key, spec.keep)
		p.Set(ctx, r.snapPointer(spec.name), s.version, spec.fresh)
		p.Del(ctx, append(tmps, out)...)
		return nil
	})
	if err != nil {
		if len(cmds) == 0 {
			return snapshot{}, fmt.Errorf("build snapshot %s: %w", s.key, err)
		}
		for _, c := range cmds {
			if e := c.Err(); e != nil && (c != rename || !isNoSuchKey(e)) {
				return snapshot{}, fmt.Errorf("build snapshot %s: %s: %w", s.key, c.Name(), e)
			}
		}
	}
	return s, nil
}

// isNoSuchKey reports the RENAME error of an empty result (ZUNIONSTORE of
// empty inputs stores nothing): the snapshot is then empty.
func isNoSuchKey(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such key")
}
