// Package testkafka runs real Apache Kafka brokers (4.1.1, KRaft mode) for
// tests: one combined broker+controller node (Start) or a small cluster of
// such nodes forming one quorum (StartCluster).
//
// The brokers are started by the project's script scripts/testenv/kafka.sh
// (the one implementation of the start logic, also used by people and CI),
// which runs them from Maven Central jars with the machine's Java. Every node
// listens on free 127.0.0.1 ports below the kernel's ephemeral range and keeps
// its configuration, data and broker.log in the test's temporary directory.
//
// Every JVM is SIGKILLed by a tb.Cleanup hook, even when the test fails. When
// the test binary dies without running its cleanups (for example on a go test
// timeout), a watchdog started by the script kills its JVMs within a second,
// so no kafka.Kafka process outlives the test.
//
// Java 17+ must be on PATH and the jars must have been fetched once with
// `scripts/testenv/kafka.sh fetch` (into .testenv/, or $PROJECTOR_TESTENV_DIR).
// When either is missing the test fails (tb.Fatalf) with the command that
// fixes it; it is never skipped.
package testkafka
