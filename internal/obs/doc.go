// Package obs holds projector's observability plumbing: the zap logger
// (NewLogger), the Prometheus metrics on a private registry (NewMetrics),
// the readiness state (Health) and the HTTP endpoints /metrics, /healthz and
// /readyz (NewHTTPHandler, Serve), behind the security headers and the
// GET-and-HEAD-only rule of every HTTP response (Harden).
package obs
