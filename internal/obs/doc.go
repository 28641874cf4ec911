// Package obs holds projector's observability plumbing: the zap logger
// (NewLogger), the Prometheus metrics on a private registry (NewMetrics),
// the readiness state (Health) and the HTTP endpoints /metrics, /healthz and
// /readyz (NewHTTPHandler, Serve).
package obs
