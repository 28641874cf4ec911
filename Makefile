# projector build targets. `make test` is what CI runs (.ci/run).
.PHONY: test run fuzz build chaos

test:
	go vet ./... && go test -count=1 -timeout 20m ./...

run:
	go run ./cmd/consumer

fuzz:
	go test -run=^$$ -fuzz=FuzzDecode -fuzztime=30s ./pkg/events

build:
	go build ./...

# The chaos suite against Apache Kafka (3 consumers, kill -9, Redis SIGSTOP and
# restart, broker restart). Not yet part of `make test`: it still finds records
# dead-lettered twice (see the README).
chaos:
	go test -tags chaos -count=1 -timeout 20m -run Chaos -v ./internal/e2e
