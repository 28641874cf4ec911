// Package testredis runs real redis-server processes for tests: a standalone
// server (StartStandalone) or a small Redis Cluster of masters (StartCluster).
//
// Every server listens on a free 127.0.0.1 port, keeps its files in the
// test's temporary directory and is killed by a tb.Cleanup hook, even when the
// test fails. On Linux a server is also killed when the test binary dies (for
// example on a go test timeout), so no redis-server process outlives the test.
//
// redis-server must be on PATH. When it is missing or does not start, the
// test fails (tb.Fatalf); it is never skipped.
package testredis
