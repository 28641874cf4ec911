# syntax=docker/dockerfile:1
# projector images: static binaries of consumer, replayer and api on distroless/static,
# running as the non-root user 65532 (nonroot). One image, three commands:
#   docker build -t projector .
#   docker run projector                       # consumer (the entrypoint)
#   docker run --entrypoint replayer projector --dry-run
#   docker run --entrypoint api projector
ARG GO_VERSION=1.26.8

FROM golang:${GO_VERSION}-bookworm AS build
WORKDIR /src
# Modules first, so a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# CGO off: fully static binaries that need no libc in the final image.
ENV CGO_ENABLED=0 GOOS=linux GOFLAGS=-trimpath
RUN go build -ldflags="-s -w" -o /out/ ./cmd/consumer ./cmd/replayer ./cmd/api

FROM gcr.io/distroless/static-debian12:nonroot
COPY --from=build /out/consumer /out/replayer /out/api /usr/local/bin/
COPY configs/consumer.yaml /etc/projector/consumer.yaml
USER 65532:65532
# /metrics, /healthz and /readyz of the consumer (http.addr).
EXPOSE 9090
ENTRYPOINT ["/usr/local/bin/consumer"]
