// Package testredis runs real redis-server or valkey-server processes for
// tests: a standalone server (StartStandalone), a small cluster of masters
// (StartCluster), or a master with replicas watched by three Sentinels
// (StartSentinel: the same binary run with --sentinel).
//
// Every server listens on a free 127.0.0.1 port, keeps its files in the
// test's temporary directory and is killed by a tb.Cleanup hook, even when the
// test fails. On Linux a server is also killed when the test binary dies (for
// example on a go test timeout), so no server process outlives the test.
//
// The default flavor is Redis: Debian's redis-server (7.0), which must be on
// PATH. WithValkey (or WithFlavor(Valkey)) starts valkey-server 8.1 instead,
// from $PROJECTOR_VALKEY_SERVER or the test environment that
// scripts/testenv/valkey.sh fetch fills (<module root>/.testenv/valkey/bin,
// or $PROJECTOR_TESTENV_DIR/valkey/bin). Flavors lists both, for tests that
// run on each. When a binary is missing or does not start, the test fails
// (tb.Fatalf) naming the command that installs it; it is never skipped.
package testredis
