package records

import (
	"context"
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

func TestDLQClaims(t *testing.T) {
	ctx := context.Background()
	srv := testredis.StartStandalone(t)
	d := NewDLQMarks(srv.Client(), "")
	claim := func(owner string, ttl time.Duration, parts ...string) string {
		t.Helper()
		h, err := d.Claim(ctx, parts, owner, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	if h := claim("a", time.Minute, "v:0", "v:1"); h != "" {
		t.Fatalf("first claim refused, held by %q", h)
	}
	if h := claim("a", time.Minute, "v:1"); h != "" {
		t.Fatalf("owner's own claim refused, held by %q", h)
	}
	if h := claim("b", time.Minute, "v:2", "v:1"); h != "a" {
		t.Fatalf("claim on a held partition: holder %q, want a", h)
	}
	if n := srv.Client().HExists(ctx, "px:dlq:{g}", "c:v:2").Val(); n {
		t.Fatalf("a refused claim claimed v:2 anyway")
	}
	if err := d.Release(ctx, []string{"v:0", "v:1"}, "b"); err != nil {
		t.Fatal(err)
	}
	if h := claim("b", time.Minute, "v:1"); h != "a" {
		t.Fatalf("another owner's release dropped a's claim: holder %q", h)
	}
	if err := d.Release(ctx, []string{"v:0", "v:1"}, "a"); err != nil {
		t.Fatal(err)
	}
	if h := claim("b", 50*time.Millisecond, "v:1", "v:0"); h != "" {
		t.Fatalf("claim after release refused, held by %q", h)
	}
	time.Sleep(100 * time.Millisecond)
	if h := claim("c", time.Minute, "v:1"); h != "" {
		t.Fatalf("expired claim still held by %q", h)
	}
}
