// Package e2e holds the end-to-end tests: the built consumer binary against a
// real redis-server (standalone and cluster) and an in-process Kafka-protocol
// broker, crashed and restarted mid-stream, compared with the reference model.
package e2e
