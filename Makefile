# projector build targets. `make test` is what CI runs (.ci/run).
.PHONY: setup test run fuzz build chaos soak bench

# Everything the tests and the benchmark need on a fresh clone: missing
# system programs (installed with apt-get when root on Debian), the Go
# modules, the Kafka jars and valkey-server. Quick when all is present.
setup:
	scripts/testenv/setup.sh

test: setup
	go vet ./... && go test -count=1 -timeout 40m ./...

run:
	go run ./cmd/consumer

fuzz:
	go test -run=^$$ -fuzz=FuzzDecode -fuzztime=30s ./pkg/events

build:
	go build ./...

# Only the chaos tests (part of `make test` too): 3 consumers, 14 kill -9,
# Redis SIGSTOP and restart, a broker of 3 restarted; standalone and cluster.
chaos: setup
	go test -count=1 -timeout 40m -run Chaos -v ./internal/e2e

# Longer explorations than `make test` runs: the stateful property test of
# the appliers (TestExploreInterleavings) over 5,000 schedules per apply
# path (EXPLORE_CHECKS), and the seeded rebuild runs with 20 seeds on Redis
# standalone and Cluster (E2E_REBUILD_RUNS).
soak: setup
	go test -count=1 -timeout 60m -run TestExploreInterleavings -v ./internal/apply -rapid.checks=$${EXPLORE_CHECKS:-5000}
	E2E_REBUILD_RUNS=$${E2E_REBUILD_RUNS:-20} go test -count=1 -timeout 60m -run 'TestRebuildRuns' -v ./internal/e2e

# The benchmark (BENCHMARKS.md): real redis-server and Apache Kafka on
# loopback, 2,000,000 generated events by default; BENCH_FLAGS for smaller
# or other runs, e.g. make bench BENCH_FLAGS='-events 200000 -cluster 2'.
bench: setup
	go run ./cmd/bench $(BENCH_FLAGS)
