# projector build targets. `make test` is what CI runs (.ci/run).
.PHONY: test run fuzz build

test:
	go vet ./... && go test -count=1 -timeout 20m ./...

run:
	go run ./cmd/consumer

fuzz:
	go test -run=^$$ -fuzz=FuzzDecode -fuzztime=30s ./pkg/events

build:
	go build ./...
