// Package deploycheck holds the tests of the deployment files that can run
// without a container runtime: the Dockerfile builds every command as a
// static binary, docker-compose.yml and the Prometheus files parse and say
// what the README promises, and every metric the Grafana dashboard and the
// alerting rules query is served on /metrics by a running consumer; and Go
// comments and documents point to docs/contract.md, at sections it has.
package deploycheck
