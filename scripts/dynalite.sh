#!/usr/bin/env bash
# Starts dynalite, a DynamoDB-compatible server, for the runtime/dynamostore
# tests: in memory, in the background, on a loopback port. Idempotent: when
# the port already answers, it does nothing. Installs the pinned npm package
# (tools/package.json + package-lock.json) when tools/node_modules is missing.
#
#   scripts/dynalite.sh [start]   start (default) on $DYNALITE_PORT (4567)
#   scripts/dynalite.sh stop      stop the instance this script started
#   scripts/dynalite.sh status    exit 0 when the port answers
#
# Environment: DYNALITE_PORT (default 4567), DYNALITE_HOST (127.0.0.1),
# DYNALITE_PLAIN=1 runs dynalite unmodified (see tools/dynalite-server.js),
# DYNALITE_PATH=DIR keeps its tables on disk in DIR instead of in memory.
# Tests find it through IDEM_DYNAMO_ENDPOINT (default http://127.0.0.1:4567).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
host=${DYNALITE_HOST:-127.0.0.1}
port=${DYNALITE_PORT:-4567}
rundir=${DYNALITE_RUNDIR:-${TMPDIR:-/tmp}/idemgen-dynalite}
pidfile=$rundir/$port.pid
logfile=$rundir/$port.log
LOG_NAME=dynalite.sh
# log, retry, wait_started, stop_pidfile, apt_install.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

answers() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

# installed_ok: node_modules holds the dynalite version package.json pins
# (a bumped pin reinstalls).
installed_ok() {
	[ -f "$root/tools/node_modules/dynalite/package.json" ] || return 1
	command -v node >/dev/null 2>&1 || return 1
	node -e '
		const want = require(process.argv[1]).dependencies.dynalite
		const have = require(process.argv[2]).version
		process.exit(want === have ? 0 : 1)
	' "$root/tools/package.json" "$root/tools/node_modules/dynalite/package.json"
}

install() {
	if installed_ok; then
		return
	fi
	if ! command -v npm >/dev/null 2>&1; then
		log "npm not found; installing Node.js and npm with apt-get"
		apt_install nodejs npm
	fi
	npm ci --prefix "$root/tools" --no-audit --no-fund --loglevel=error >&2
}

# transacts: the server on the port runs TransactWriteItems, which
# tools/dynalite-server.js adds to dynalite (the ordering tests need it).
# A plain dynalite, or one this script started from an older checkout,
# answers UnknownOperationException.
transacts() {
	[ "${DYNALITE_PLAIN:-}" = 1 ] && return 0
	command -v curl >/dev/null 2>&1 || return 0
	! curl -s -m 5 -X POST "http://$host:$port/" \
		-H 'Content-Type: application/x-amz-json-1.0' \
		-H 'X-Amz-Target: DynamoDB_20120810.TransactWriteItems' \
		-H 'X-Amz-Date: 20260101T000000Z' \
		-H 'Authorization: AWS4-HMAC-SHA256 Credential=x/20260101/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x' \
		-d '{"TransactItems":[]}' | grep -q UnknownOperation
}

start() {
	if answers; then
		if transacts; then
			return 0
		fi
		if [ ! -f "$pidfile" ]; then
			log "a server on $host:$port lacks TransactWriteItems and was not started by this script: stop it, or set DYNALITE_PORT"
			return 1
		fi
		log "the dynalite on $host:$port lacks TransactWriteItems (an older checkout's): restarting it"
		stop
	fi
	install
	mkdir -p "$rundir"
	args=(--host "$host" --port "$port")
	if [ "${DYNALITE_PLAIN:-}" = 1 ]; then
		args+=(--plain)
	fi
	if [ -n "${DYNALITE_PATH:-}" ]; then
		args+=(--path "$DYNALITE_PATH")
	fi
	# setsid: the server outlives this script and make's process group.
	setsid node "$root/tools/dynalite-server.js" "${args[@]}" >"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	# Up to 30s: node starts slowly on a loaded machine.
	if wait_started 300 0.1 "$pidfile" answers; then
		echo "dynalite listening on http://$host:$port (log $logfile)" >&2
		return 0
	fi
	log "dynalite did not start on $host:$port; log:" >&2
	cat "$logfile" >&2 || true
	return 1
}

stop() { stop_pidfile "$pidfile" 50; }

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) answers ;;
*)
	echo "usage: $0 [start|stop|status]" >&2
	exit 2
	;;
esac
