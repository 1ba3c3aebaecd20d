# Shell helpers shared by the service scripts (redis-cluster.sh,
# redis-failover.sh, firestore.sh, dynalite.sh); sourced, not run:
#
#   . "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# log prefixes its messages with $LOG_NAME, which the script sets.

log() { echo "$LOG_NAME: $*" >&2; }

# retry TRIES INTERVAL CMD...: runs CMD until it succeeds, at most TRIES
# times, INTERVAL seconds apart; fails when it never did.
retry() {
	local tries=$1 interval=$2 i
	shift 2
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		sleep "$interval"
	done
	return 1
}

# wait_started TRIES INTERVAL PIDFILE CMD...: like retry, but gives up as
# soon as the process in PIDFILE (just started in the background) exited.
wait_started() {
	local tries=$1 interval=$2 pidfile=$3 i
	shift 3
	for ((i = 0; i < tries; i++)); do
		"$@" && return 0
		kill -0 "$(cat "$pidfile")" 2>/dev/null || return 1
		sleep "$interval"
	done
	return 1
}

# stop_pidfile PIDFILE TRIES [group]: stops the process this script
# started (its pid in PIDFILE), waiting up to TRIES tenths of a second for
# it to exit, and removes PIDFILE. With "group" it kills the process's
# session (a setsid leader and its children), then SIGKILLs what is left.
stop_pidfile() {
	local pidfile=$1 tries=$2 group=${3:-} pid
	[ -f "$pidfile" ] || return 0
	pid=$(cat "$pidfile")
	if kill -0 "$pid" 2>/dev/null; then
		if [ "$group" = group ]; then
			kill -- -"$pid" 2>/dev/null || kill "$pid"
		else
			kill "$pid"
		fi
		retry "$tries" 0.1 not kill -0 "$pid" 2>/dev/null || true
		if [ "$group" = group ]; then
			kill -9 -- -"$pid" 2>/dev/null || true
		fi
	fi
	rm -f "$pidfile"
}

not() { ! "$@"; }

# apt_install PKG...: installs Debian packages quietly, with sudo unless
# root.
apt_install() {
	local sudo=""
	[ "$(id -u)" = 0 ] || sudo="sudo"
	$sudo apt-get update -qq
	DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

# --- Redis (HOST is the script's loopback address) ---

ensure_redis() {
	if command -v redis-server >/dev/null && command -v redis-cli >/dev/null; then
		return
	fi
	log "installing redis-server and redis-tools"
	apt_install redis-server redis-tools
}

cli() { redis-cli -h "$HOST" -p "$1" "${@:2}"; }

# Outputs are captured whole before matching: `cmd | grep -q` under
# pipefail can fail when grep exits before cmd finishes writing.
up() { [[ "$(cli "$1" ping 2>/dev/null || true)" == PONG* ]]; }

# wait_up PORT LOGFILE: waits up to 5s for a node just started to answer;
# exits the script when it does not.
wait_up() {
	retry 50 0.1 up "$1" && return
	log "node $1 did not start; see $2"
	exit 1
}

# stop_ports PORT...: shuts the nodes down without saving and waits up to
# 5s for each to stop answering.
stop_ports() {
	local p
	for p in "$@"; do
		if up "$p"; then cli "$p" shutdown nosave >/dev/null 2>&1 || true; fi
	done
	for p in "$@"; do
		retry 50 0.1 not up "$p" || true
	done
}

# cluster_reset PORT...: empties the nodes and makes them forget any
# cluster, so they can form a new one.
cluster_reset() {
	local p
	for p in "$@"; do
		cli "$p" flushall >/dev/null 2>&1 || true
		cli "$p" cluster reset hard >/dev/null
	done
}

# cluster_create LOGFILE REPLICAS PORT...: forms a cluster of the nodes
# with REPLICAS replicas per master; exits the script, showing LOGFILE,
# when redis-cli fails.
cluster_create() {
	local logfile=$1 replicas=$2 p addrs=()
	shift 2
	for p in "$@"; do addrs+=("$HOST:$p"); done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$logfile" 2>&1 || {
		cat "$logfile" >&2
		exit 1
	}
}
