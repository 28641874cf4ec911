package testredis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// checkFlavor returns nil when INFO server of n says it is flavor f and
// n.Version() is the version INFO reports for that flavor.
func checkFlavor(ctx context.Context, n *Server, f Flavor) error {
	if n.Flavor() != f {
		return fmt.Errorf("Flavor() = %s, want %s", n.Flavor(), f)
	}
	info, err := n.Client().Info(ctx, "server").Result()
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	fields := parseInfo(info)
	valkey, isValkey := fields["valkey_version"]
	switch f {
	case Valkey:
		if !isValkey || !strings.HasPrefix(valkey, "8.1.") {
			return fmt.Errorf("valkey_version = %q, want 8.1.x", valkey)
		}
		if n.Version() != valkey {
			return fmt.Errorf("Version() = %q, INFO valkey_version %q", n.Version(), valkey)
		}
	case Redis:
		if isValkey {
			return fmt.Errorf("default flavor runs valkey %s, want redis-server", valkey)
		}
		if v := fields["redis_version"]; v == "" || n.Version() != v {
			return fmt.Errorf("Version() = %q, INFO redis_version %q", n.Version(), v)
		}
	}
	return nil
}

func TestFlavorsDefaultFirst(t *testing.T) {
	if got := Flavors(); !slices.Equal(got, []Flavor{Redis, Valkey}) {
		t.Fatalf("Flavors() = %v, want [redis valkey]", got)
	}
	if f := defaultConfig().flavor; f != Redis {
		t.Fatalf("default flavor = %s, want redis", f)
	}
}

func TestStandaloneFlavors(t *testing.T) {
	ctx := context.Background()
	for _, f := range Flavors() {
		t.Run(string(f), func(t *testing.T) {
			s := StartStandalone(t, WithFlavor(f))
			if err := checkFlavor(ctx, s, f); err != nil {
				t.Fatal(err)
			}
			if err := s.Client().Set(ctx, "k", string(f), 0).Err(); err != nil {
				t.Fatalf("SET: %v", err)
			}
			if got, err := s.Client().Get(ctx, "k").Result(); err != nil || got != string(f) {
				t.Fatalf("GET k = %q, %v; want %q", got, err, f)
			}
		})
	}
}

func TestDefaultIsRedis(t *testing.T) {
	s := StartStandalone(t)
	if err := checkFlavor(context.Background(), s, Redis); err != nil {
		t.Fatal(err)
	}
}

// waitAOF runs WAITAOF numlocal 0 timeout and returns its reply.
func waitAOF(ctx context.Context, s *Server, numlocal, timeoutMs int) ([]int64, error) {
	res, err := s.Client().Do(ctx, "WAITAOF", numlocal, 0, timeoutMs).Int64Slice()
	if err != nil {
		return nil, fmt.Errorf("WAITAOF %d 0 %d on %s: %w", numlocal, timeoutMs, s.Addr(), err)
	}
	return res, nil
}

// TestValkeyWaitAOF checks the command Debian's Redis 7.0 lacks. With
// appendfsync everysec (WithAOF) the server fsyncs as soon as a client waits,
// so the generous timeout only bounds a broken server; with appendfsync
// always a write is fsynced before its reply. Either way WAITAOF reports the
// local AOF and no replica.
func TestValkeyWaitAOF(t *testing.T) {
	ctx := context.Background()
	for _, fsync := range []string{"everysec", "always"} {
		s := StartStandalone(t, WithValkey(), WithAOF(), WithArgs("--appendfsync", fsync))
		if err := s.Client().Set(ctx, "durable", "yes", 0).Err(); err != nil {
			t.Fatalf("SET: %v", err)
		}
		got, err := waitAOF(ctx, s, 1, 5000)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []int64{1, 0}) {
			t.Fatalf("appendfsync %s: WAITAOF 1 0 5000 = %v, want [1 0]", fsync, got)
		}
	}
	// Without an AOF the server refuses to wait for one.
	plain := StartStandalone(t, WithValkey())
	if _, err := waitAOF(ctx, plain, 1, 100); err == nil {
		t.Fatal("WAITAOF 1 0 100 with appendonly no succeeded, want an error")
	}
}

func TestValkeyRestartWithAOFKeepsData(t *testing.T) {
	s := StartStandalone(t, WithValkey(), WithAOF())
	ctx := context.Background()
	if err := s.Client().Set(ctx, "durable", "yes", 0).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	s.Stop()
	s.Restart(t)
	if err := checkFlavor(ctx, s, Valkey); err != nil {
		t.Fatalf("after restart: %v", err)
	}
	if got, err := s.Client().Get(ctx, "durable").Result(); err != nil || got != "yes" {
		t.Fatalf("GET durable after restart = %q, %v; want \"yes\"", got, err)
	}
}

// TestValkeyClusterWaitAOF writes one key on each master of a 3-node Valkey
// cluster and waits for each master's AOF.
func TestValkeyClusterWaitAOF(t *testing.T) {
	ctx := context.Background()
	c := StartCluster(t, 3, WithValkey(), WithAOF(), WithArgs("--appendfsync", "always"))
	for _, tag := range tagPerNode(t, ctx, c.Client()) {
		if err := c.Client().Set(ctx, "{"+tag+"}", "1", 0).Err(); err != nil {
			t.Fatalf("SET {%s}: %v", tag, err)
		}
	}
	for _, n := range c.Nodes() {
		if size, err := n.Client().DBSize(ctx).Result(); err != nil || size != 1 {
			t.Fatalf("DBSIZE on %s = %d, %v; want 1", n.Addr(), size, err)
		}
		got, err := waitAOF(ctx, n, 1, 100)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, []int64{1, 0}) {
			t.Fatalf("WAITAOF 1 0 100 on %s = %v, want [1 0]", n.Addr(), got)
		}
	}
}

func TestValkeyBinaryMissingNamesFetch(t *testing.T) {
	t.Setenv(valkeyServerEnv, "")
	t.Setenv(testenvEnv, t.TempDir())
	_, err := Valkey.binary()
	if err == nil || !strings.Contains(err.Error(), valkeyFetch) {
		t.Fatalf("binary() with an empty test environment: err = %v, want one naming %q", err, valkeyFetch)
	}
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("binary() error %v does not wrap the missing file", err)
	}
}

func TestValkeyBinaryFromEnv(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "valkey-server")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(valkeyServerEnv, p)
	if _, err := Valkey.binary(); err == nil {
		t.Fatalf("binary() with %s=%s (not executable) succeeded", valkeyServerEnv, p)
	}
	if err := os.Chmod(p, 0o755); err != nil {
		t.Fatal(err)
	}
	if got, err := Valkey.binary(); err != nil || got != p {
		t.Fatalf("binary() = %q, %v; want %q", got, err, p)
	}
}

// fatalTB records the first Fatalf and ends the goroutine, as testing.T does.
type fatalTB struct {
	testing.TB
	msg string
}

func (f *fatalTB) Helper() {}

func (f *fatalTB) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestStartWithoutValkeyFails checks that a start without the binary fails
// the test with the command that fetches it.
func TestStartWithoutValkeyFails(t *testing.T) {
	t.Setenv(valkeyServerEnv, "")
	t.Setenv(testenvEnv, t.TempDir())
	tb := &fatalTB{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		StartStandalone(tb, WithValkey())
	}()
	<-done
	if !strings.Contains(tb.msg, valkeyFetch) {
		t.Fatalf("StartStandalone without valkey-server: Fatalf %q, want it to name %q", tb.msg, valkeyFetch)
	}
}

func TestUnknownFlavor(t *testing.T) {
	if _, err := Flavor("memcached").binary(); err == nil || !strings.Contains(err.Error(), "memcached") {
		t.Fatalf("binary() of an unknown flavor: err = %v, want one naming it", err)
	}
}
