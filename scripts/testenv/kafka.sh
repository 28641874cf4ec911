#!/usr/bin/env bash
# Real Apache Kafka (4.1.1, KRaft mode) for projector's tests, run from its
# Maven Central jars with the machine's Java (17+) and Maven; no Docker, no
# release tarball. internal/testing/testkafka calls this script; people and CI can too.
#
# Usage:
#   kafka.sh fetch
#       Copy the broker jars (scripts/testenv/kafka/pom.xml) into the lib dir
#       with Maven. Skips when the lib dir is complete for the current pom.
#   kafka.sh start [--id N] [--port P] [--controller-port C] [--data DIR]
#                  [--heap SIZE] [--timeout SECS] [--prop k=v]... [--owner-pid PID]
#       Start one combined broker+controller node on 127.0.0.1 (defaults:
#       id 1, ports 9092/9093, DIR <run>/node-<id>, heap 512m, timeout 60):
#       write DIR/server.properties, format DIR/data with a random cluster id,
#       start the JVM in the background (pid in DIR/broker.pid, log in
#       DIR/broker.log), wait until it serves, print the bootstrap address.
#       A DIR already formatted keeps its data (delete it for a fresh node).
#   kafka.sh start-cluster [--brokers N] [--base-port P] [--data ROOT]
#                  [--heap SIZE] [--timeout SECS] [--prop k=v]... [--owner-pid PID]
#       Start N (default 3) combined nodes forming one KRaft quorum; node i
#       (1..N) serves on P+i-1 and its controller listens on P+N+i-1 (default
#       P 19092); its files are in ROOT/node-<i> (default ROOT <run>/cluster).
#       Internal topics get replication min(N,3), min.insync.replicas is
#       min(N,2). Waits until every node serves; prints the bootstrap list.
#   kafka.sh restart [--data DIR] [--heap SIZE] [--timeout SECS] [--owner-pid PID]
#       Start a stopped node again from DIR (same config, ports and data).
#   kafka.sh stop [--data DIR] [--timeout SECS]
#       SIGTERM the node of DIR, wait, SIGKILL after SECS (default 30).
#   kafka.sh stop-all [--data ROOT] [--timeout SECS]
#       Stop every node whose files are under ROOT (default <run>), in parallel.
#
# Node defaults: auto.create.topics.enable=true, num.partitions=1, internal
# topics with one partition, group.initial.rebalance.delay.ms=0,
# broker.session.timeout.ms=4000 (a SIGKILLed node is fenced, and may
# register again, after 4s).
# --prop k=v (repeatable) appends a broker property after the defaults, so it
# overrides them: --prop message.max.bytes=3145728
# --prop auto.create.topics.enable=false
# PROJECTOR_KAFKA_JVM_OPTS: extra JVM options for the brokers (they come last).
# --owner-pid PID: a watchdog SIGKILLs the JVM once process PID has exited (the
# Go test helper passes its own pid, so no broker outlives a killed test).
#
# Directories: PROJECTOR_TESTENV_DIR (default <repo>/.testenv, git-ignored)
# holds kafka/lib (the jars) and kafka/run (default node directories).
set -euo pipefail

readonly KAFKA_MAIN=kafka.Kafka
readonly STORAGE_MAIN=kafka.tools.StorageTool

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO=$(cd "$HERE/../.." && pwd)
TESTENV=${PROJECTOR_TESTENV_DIR:-$REPO/.testenv}
LIB=$TESTENV/kafka/lib
RUN=$TESTENV/kafka/run
POM_DIR=$HERE/kafka

die() {
	echo "kafka.sh: $*" >&2
	exit 1
}

usage() {
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
}

# pom_stamp identifies the artifact list a lib dir was fetched for.
pom_stamp() {
	sha256sum "$POM_DIR/pom.xml" | cut -d' ' -f1
}

# lib_ready succeeds when LIB holds a complete fetch for the current pom.
lib_ready() {
	[ -f "$LIB/.fetched" ] && [ "$(cat "$LIB/.fetched")" = "$(pom_stamp)" ]
}

cmd_fetch() {
	[ $# -eq 0 ] || die "fetch takes no arguments"
	if lib_ready; then
		echo "kafka.sh: jars already in $LIB"
		return 0
	fi
	command -v mvn >/dev/null 2>&1 || die "mvn not found: install Maven (apt-get install maven)"
	command -v java >/dev/null 2>&1 || die "java not found: install Java 17+ (apt-get install default-jre-headless)"
	mkdir -p "$(dirname "$LIB")"
	local tmp
	tmp=$(mktemp -d "$LIB.tmp.XXXXXX")
	echo "kafka.sh: fetching Kafka jars from Maven Central into $LIB"
	if ! (cd "$POM_DIR" && mvn -q -B -Dstyle.color=never dependency:copy-dependencies \
		-DoutputDirectory="$tmp" -DincludeScope=runtime); then
		rm -rf "$tmp"
		die "mvn dependency:copy-dependencies failed (see above); is Maven Central reachable?"
	fi
	ls "$tmp"/kafka_2.13-*.jar >/dev/null 2>&1 || {
		rm -rf "$tmp"
		die "fetch produced no kafka_2.13 jar in $tmp"
	}
	pom_stamp >"$tmp/.fetched"
	rm -rf "$LIB"
	mv "$tmp" "$LIB"
	echo "kafka.sh: $(find "$LIB" -name '*.jar' | wc -l) jars in $LIB"
}

# need_runtime fails with the fix when java or the jars are missing.
need_runtime() {
	command -v java >/dev/null 2>&1 ||
		die "java not found on PATH: install Java 17+ (apt-get install default-jre-headless), then run $HERE/kafka.sh fetch"
	lib_ready ||
		die "Kafka jars missing or stale in $LIB: run $HERE/kafka.sh fetch"
}

# jvm_opts SIZE prints the JVM options of a node with a SIZE heap: Kafka's
# own KAFKA_HEAP_OPTS and KAFKA_JVM_PERFORMANCE_OPTS with a smaller heap, plus
# C1-only JIT (TieredStopAtLevel=1: starts ~1s faster and spends less CPU on
# compiling, which matters with several brokers on 2 cores) and no
# /tmp/hsperfdata files (-UsePerfData: jps does not list the brokers), then
# $PROJECTOR_KAFKA_JVM_OPTS, which wins (e.g. -XX:TieredStopAtLevel=4).
jvm_opts() {
	echo "-Xms$1 -Xmx$1 -server -XX:+UseG1GC -XX:MaxGCPauseMillis=20" \
		"-XX:InitiatingHeapOccupancyPercent=35 -XX:+ExplicitGCInvokesConcurrent" \
		"-XX:MaxInlineLevel=15 -XX:TieredStopAtLevel=1 -XX:-UsePerfData" \
		"-Djava.awt.headless=true" \
		"-Dlog4j2.configurationFile=$POM_DIR/log4j2.properties" \
		"${PROJECTOR_KAFKA_JVM_OPTS:-}"
}

# random_cluster_id prints a Kafka cluster id: 16 random bytes, URL-safe
# base64 without padding, not starting with '-' (as Uuid.randomUuid does).
random_cluster_id() {
	local id
	while :; do
		id=$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | tr -d '=\n')
		[ "${id:0:1}" != "-" ] && break
	done
	echo "$id"
}

# alive PID succeeds while PID is a running (not zombie) process.
alive() {
	kill -0 "$1" 2>/dev/null || return 1
	if [ -r "/proc/$1/stat" ]; then
		local stat
		stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
		stat=${stat##*) }
		[ "${stat:0:1}" != Z ] || return 1
	fi
	return 0
}

# node_pid DIR prints the pid of the JVM running the node of DIR, if any:
# the pid file must name a live kafka.Kafka process started with
# DIR/server.properties (a recycled pid is never signalled).
node_pid() {
	local dir=$1 pid
	[ -f "$dir/broker.pid" ] || return 1
	pid=$(cat "$dir/broker.pid")
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	alive "$pid" || return 1
	if [ -r "/proc/$pid/cmdline" ]; then
		local cmdline
		cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
		[[ $cmdline == *"$KAFKA_MAIN $dir/server.properties"* ]] || return 1
	fi
	echo "$pid"
}

# write_config DIR ID PORT CPORT VOTERS EXTRA... writes DIR/server.properties.
# EXTRA are k=v lines appended after the defaults (later lines win).
write_config() {
	local dir=$1 id=$2 port=$3 cport=$4 voters=$5
	shift 5
	{
		echo "# written by scripts/testenv/kafka.sh"
		echo "process.roles=broker,controller"
		echo "node.id=$id"
		echo "controller.quorum.voters=$voters"
		echo "listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$cport"
		echo "advertised.listeners=PLAINTEXT://127.0.0.1:$port"
		echo "inter.broker.listener.name=PLAINTEXT"
		echo "controller.listener.names=CONTROLLER"
		echo "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT"
		echo "log.dirs=$dir/data"
		echo "num.partitions=1"
		echo "auto.create.topics.enable=true"
		echo "offsets.topic.num.partitions=1"
		echo "transaction.state.log.num.partitions=1"
		echo "share.coordinator.state.topic.num.partitions=1"
		echo "group.initial.rebalance.delay.ms=0"
		echo "num.network.threads=2"
		echo "num.io.threads=2"
		echo "num.recovery.threads.per.data.dir=1"
		echo "background.threads=2"
		# A node killed with SIGKILL cannot register again until its old
		# session expires (DUPLICATE_BROKER_REGISTRATION), and a killed node's
		# partitions move only then: 4s instead of 9s keeps restarts and
		# failovers quick.
		echo "broker.session.timeout.ms=4000"
		echo "broker.heartbeat.interval.ms=1000"
		local kv
		for kv in "$@"; do
			echo "$kv"
		done
	} >"$dir/server.properties"
}

# format_storage DIR CLUSTER_ID formats DIR/data unless already formatted.
format_storage() {
	local dir=$1 cid=$2
	[ -f "$dir/data/meta.properties" ] && return 0
	if ! java -Xms64m -Xmx256m -XX:TieredStopAtLevel=1 -cp "$LIB/*" \
		-Dlog4j2.configurationFile="$POM_DIR/log4j2.properties" \
		"$STORAGE_MAIN" format -t "$cid" -c "$dir/server.properties" >"$dir/format.log" 2>&1; then
		cat "$dir/format.log" >&2
		die "formatting storage of $dir failed"
	fi
}

# launch DIR HEAP OWNER starts the node of DIR in the background.
launch() {
	local dir=$1 heap=$2 owner=$3 pid
	if pid=$(node_pid "$dir"); then
		die "node of $dir is already running (pid $pid)"
	fi
	[ -f "$dir/broker.log" ] && mv -f "$dir/broker.log" "$dir/broker.log.prev"
	echo "$heap" >"$dir/heap"
	# shellcheck disable=SC2046 # word splitting of the options is intended
	java $(jvm_opts "$heap") -cp "$LIB/*" "$KAFKA_MAIN" "$dir/server.properties" \
		</dev/null >"$dir/broker.log" 2>&1 &
	pid=$!
	echo "$pid" >"$dir/broker.pid"
	if [ -n "$owner" ]; then
		watchdog "$owner" "$pid" </dev/null >/dev/null 2>&1 &
	fi
}

# watchdog OWNER PID SIGKILLs PID once OWNER has exited; it ends with PID.
watchdog() {
	local owner=$1 pid=$2
	while alive "$pid"; do
		if ! alive "$owner"; then
			kill -KILL "$pid" 2>/dev/null || true
			return 0
		fi
		sleep 1
	done
}

# wait_ready DIR TIMEOUT waits until the node of DIR logs "Kafka Server
# started"; on failure it shows why (the caller kills the node).
wait_ready() {
	local dir=$1 timeout=$2 pid deadline
	pid=$(cat "$dir/broker.pid")
	deadline=$((SECONDS + timeout))
	while :; do
		if grep -q 'Kafka Server started' "$dir/broker.log" 2>/dev/null; then
			return 0
		fi
		if ! alive "$pid"; then
			echo "kafka.sh: node of $dir exited during start-up" >&2
			show_failure "$dir"
			return 1
		fi
		if ((SECONDS >= deadline)); then
			echo "kafka.sh: node of $dir not serving after ${timeout}s" >&2
			show_failure "$dir"
			return 1
		fi
		sleep 0.2
	done
}

# show_failure DIR prints the first errors (each with the line after it,
# usually the exception) and the last lines of the node's log.
show_failure() {
	local log=$1/broker.log
	echo "kafka.sh: first errors in $log:" >&2
	grep -m 5 -A 1 -E '\] (ERROR|FATAL) ' "$log" >&2 || echo "(none)" >&2
	echo "kafka.sh: last lines of $log:" >&2
	tail -n 15 "$log" >&2 || true
}

# check_port NAME VALUE fails unless VALUE is a TCP port number.
check_port() {
	[[ $2 =~ ^[0-9]+$ ]] && (($2 > 0 && $2 < 65536)) || die "$1 must be a port number, got '$2'"
}

# check_prop VALUE fails unless VALUE looks like k=v.
check_prop() {
	[[ $1 =~ ^[A-Za-z0-9._-]+=.*$ ]] || die "--prop wants key=value, got '$1'"
}

# kill_nodes DIR... SIGKILLs the nodes of DIRs (clean-up after a failed start).
kill_nodes() {
	local dir pid
	for dir in "$@"; do
		if pid=$(node_pid "$dir"); then
			kill -KILL "$pid" 2>/dev/null || true
		fi
	done
}

cmd_start() {
	local id=1 port=9092 cport=9093 dir="" heap=512m timeout=60 owner="" props=()
	while [ $# -gt 0 ]; do
		case $1 in
		--id) id=${2:?--id needs a value}; shift 2 ;;
		--port) port=${2:?--port needs a value}; shift 2 ;;
		--controller-port) cport=${2:?--controller-port needs a value}; shift 2 ;;
		--data) dir=${2:?--data needs a value}; shift 2 ;;
		--heap) heap=${2:?--heap needs a value}; shift 2 ;;
		--timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
		--prop) check_prop "${2:?--prop needs k=v}"; props+=("$2"); shift 2 ;;
		--owner-pid) owner=${2:?--owner-pid needs a value}; shift 2 ;;
		*) die "start: unknown argument '$1' (see kafka.sh help)" ;;
		esac
	done
	[[ $id =~ ^[0-9]+$ ]] || die "--id must be a number, got '$id'"
	check_port --port "$port"
	check_port --controller-port "$cport"
	[ "$port" != "$cport" ] || die "--port and --controller-port must differ"
	need_runtime
	dir=${dir:-$RUN/node-$id}
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd -P)
	if node_pid "$dir" >/dev/null; then
		die "node of $dir is already running; stop it first"
	fi
	write_config "$dir" "$id" "$port" "$cport" "$id@127.0.0.1:$cport" \
		"offsets.topic.replication.factor=1" \
		"transaction.state.log.replication.factor=1" \
		"transaction.state.log.min.isr=1" \
		"share.coordinator.state.topic.replication.factor=1" \
		"share.coordinator.state.topic.min.isr=1" \
		${props[@]+"${props[@]}"}
	format_storage "$dir" "$(random_cluster_id)"
	launch "$dir" "$heap" "$owner"
	if ! wait_ready "$dir" "$timeout"; then
		kill_nodes "$dir"
		exit 1
	fi
	echo "127.0.0.1:$port"
}

cmd_start_cluster() {
	local n=3 base=19092 root="" heap=384m timeout=60 owner="" props=()
	while [ $# -gt 0 ]; do
		case $1 in
		--brokers) n=${2:?--brokers needs a value}; shift 2 ;;
		--base-port) base=${2:?--base-port needs a value}; shift 2 ;;
		--data) root=${2:?--data needs a value}; shift 2 ;;
		--heap) heap=${2:?--heap needs a value}; shift 2 ;;
		--timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
		--prop) check_prop "${2:?--prop needs k=v}"; props+=("$2"); shift 2 ;;
		--owner-pid) owner=${2:?--owner-pid needs a value}; shift 2 ;;
		*) die "start-cluster: unknown argument '$1' (see kafka.sh help)" ;;
		esac
	done
	[[ $n =~ ^[0-9]+$ ]] && ((n >= 1 && n <= 9)) || die "--brokers must be in 1..9, got '$n'"
	check_port --base-port "$base"
	check_port "--base-port + 2*brokers" $((base + 2 * n - 1))
	need_runtime
	root=${root:-$RUN/cluster}
	mkdir -p "$root"
	root=$(cd "$root" && pwd -P)
	local rf=$((n < 3 ? n : 3)) isr=$((n < 2 ? n : 2))
	local i voters="" dirs=() bootstrap=""
	for ((i = 1; i <= n; i++)); do
		voters+="${voters:+,}$i@127.0.0.1:$((base + n + i - 1))"
		bootstrap+="${bootstrap:+,}127.0.0.1:$((base + i - 1))"
		dirs+=("$root/node-$i")
	done
	for ((i = 1; i <= n; i++)); do
		if node_pid "${dirs[i - 1]}" >/dev/null; then
			die "node of ${dirs[i - 1]} is already running; stop it first"
		fi
	done
	local cid
	cid=$(random_cluster_id)
	# Format in parallel: each format is a JVM start.
	local pids=()
	for ((i = 1; i <= n; i++)); do
		local dir=${dirs[i - 1]}
		mkdir -p "$dir"
		write_config "$dir" "$i" $((base + i - 1)) $((base + n + i - 1)) "$voters" \
			"default.replication.factor=$rf" \
			"min.insync.replicas=$isr" \
			"offsets.topic.replication.factor=$rf" \
			"transaction.state.log.replication.factor=$rf" \
			"transaction.state.log.min.isr=$isr" \
			"share.coordinator.state.topic.replication.factor=$rf" \
			"share.coordinator.state.topic.min.isr=$isr" \
			${props[@]+"${props[@]}"}
		format_storage "$dir" "$cid" &
		pids+=($!)
	done
	local p
	for p in "${pids[@]}"; do
		wait "$p" || die "formatting the cluster's storage failed"
	done
	for dir in "${dirs[@]}"; do
		launch "$dir" "$heap" "$owner"
	done
	for dir in "${dirs[@]}"; do
		if ! wait_ready "$dir" "$timeout"; then
			kill_nodes "${dirs[@]}"
			exit 1
		fi
	done
	echo "$bootstrap"
}

cmd_restart() {
	local dir=$RUN/node-1 heap="" timeout=60 owner=""
	while [ $# -gt 0 ]; do
		case $1 in
		--data) dir=${2:?--data needs a value}; shift 2 ;;
		--heap) heap=${2:?--heap needs a value}; shift 2 ;;
		--timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
		--owner-pid) owner=${2:?--owner-pid needs a value}; shift 2 ;;
		*) die "restart: unknown argument '$1' (see kafka.sh help)" ;;
		esac
	done
	need_runtime
	[ -f "$dir/server.properties" ] && [ -f "$dir/data/meta.properties" ] ||
		die "$dir holds no formatted node; use start or start-cluster first"
	dir=$(cd "$dir" && pwd -P)
	if [ -z "$heap" ]; then
		# Keep the heap of the previous run.
		heap=$(cat "$dir/heap" 2>/dev/null || echo 512m)
	fi
	launch "$dir" "$heap" "$owner"
	if ! wait_ready "$dir" "$timeout"; then
		kill_nodes "$dir"
		exit 1
	fi
	sed -n 's/^advertised.listeners=PLAINTEXT:\/\///p' "$dir/server.properties"
}

# stop_node DIR TIMEOUT stops the node of DIR: SIGTERM, wait, SIGKILL.
stop_node() {
	local dir=$1 timeout=$2 pid deadline
	pid=$(node_pid "$dir") || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	deadline=$((SECONDS + timeout))
	while alive "$pid"; do
		if ((SECONDS >= deadline)); then
			echo "kafka.sh: node of $dir ignored SIGTERM for ${timeout}s; sending SIGKILL" >&2
			kill -KILL "$pid" 2>/dev/null || true
			while alive "$pid"; do sleep 0.1; done
			break
		fi
		sleep 0.1
	done
	echo "kafka.sh: stopped node of $dir"
}

cmd_stop() {
	local dir=$RUN/node-1 timeout=30
	while [ $# -gt 0 ]; do
		case $1 in
		--data) dir=${2:?--data needs a value}; shift 2 ;;
		--timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
		*) die "stop: unknown argument '$1' (see kafka.sh help)" ;;
		esac
	done
	[ -d "$dir" ] || die "no node directory $dir"
	stop_node "$(cd "$dir" && pwd -P)" "$timeout"
}

cmd_stop_all() {
	local root=$RUN timeout=30
	while [ $# -gt 0 ]; do
		case $1 in
		--data) root=${2:?--data needs a value}; shift 2 ;;
		--timeout) timeout=${2:?--timeout needs a value}; shift 2 ;;
		*) die "stop-all: unknown argument '$1' (see kafka.sh help)" ;;
		esac
	done
	[ -d "$root" ] || return 0
	root=$(cd "$root" && pwd -P)
	local f pids=()
	while IFS= read -r f; do
		stop_node "$(dirname "$f")" "$timeout" &
		pids+=($!)
	done < <(find "$root" -name broker.pid -type f)
	local p
	for p in ${pids[@]+"${pids[@]}"}; do
		wait "$p" || true
	done
}

main() {
	[ $# -ge 1 ] || usage
	local sub=$1
	shift
	case $sub in
	fetch) cmd_fetch "$@" ;;
	start) cmd_start "$@" ;;
	start-cluster) cmd_start_cluster "$@" ;;
	restart) cmd_restart "$@" ;;
	stop) cmd_stop "$@" ;;
	stop-all) cmd_stop_all "$@" ;;
	help | -h | --help) usage ;;
	*) die "unknown subcommand '$sub' (fetch, start, start-cluster, restart, stop, stop-all, help)" ;;
	esac
}

main "$@"
