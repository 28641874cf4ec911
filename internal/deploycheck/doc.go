// Package deploycheck holds the tests of the deployment and build files that
// can run without a container runtime: the Dockerfile builds every command as
// a static binary, docker-compose.yml and the Prometheus files parse and say
// what the README promises, every metric the Grafana dashboard and the
// alerting rules query is served on /metrics by a running consumer, promtool
// accepts the alerting rules and its rules tests make each alert fire and
// stay quiet, a real Prometheus scraping a running consumer evaluates every
// rule, CI runs
// only the README's test command, make setup (which make test and make bench
// run first) prepares a fresh copy of the repository, and Go comments and
// documents point to docs/contract.md, at sections it has.
package deploycheck
