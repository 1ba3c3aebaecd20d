#!/usr/bin/env bash
# Starts the Google Cloud CLI's Firestore emulator for the
# runtime/firestorestore tests and the Firestore reliability rows: in
# memory, in the background, on a loopback port. Idempotent: when the port
# already answers, it does nothing. The emulator is a Java 17 program that
# takes about 20 s to answer on this machine, so start waits up to 120 s.
#
#   scripts/firestore.sh [start]   start (default) on $FIRESTORE_PORT (8765)
#   scripts/firestore.sh stop      stop the instance this script started
#   scripts/firestore.sh status    exit 0 when the emulator answers HTTP
#
# Environment: FIRESTORE_PORT (default 8765), FIRESTORE_HOST (127.0.0.1),
# FIRESTORE_RUNDIR (pidfile and log; default $TMPDIR/idemgen-firestore).
# Tests find it through IDEM_FIRESTORE_EMULATOR_HOST (default
# 127.0.0.1:8765); FIRESTORE_EMULATOR_HOST, the variable Google's clients
# read, is honoured too.
set -euo pipefail

host=${FIRESTORE_HOST:-127.0.0.1}
port=${FIRESTORE_PORT:-8765}
rundir=${FIRESTORE_RUNDIR:-${TMPDIR:-/tmp}/idemgen-firestore}
pidfile=$rundir/$port.pid
logfile=$rundir/$port.log
LOG_NAME=firestore.sh
# log, retry, wait_started, stop_pidfile.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# answers: the emulator's HTTP root replies "Ok" once it serves requests
# (the port accepts connections a little before that).
answers() {
	local reply
	reply=$( (
		exec 3<>"/dev/tcp/$host/$port" || exit 1
		printf 'GET / HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' "$host" "$port" >&3
		timeout 5 head -n 1 <&3
	) 2>/dev/null) || true
	case "$reply" in
	"HTTP/1."*" 200"*) return 0 ;;
	esac
	return 1
}

start() {
	if answers; then
		return 0
	fi
	if ! command -v gcloud >/dev/null 2>&1 || ! command -v java >/dev/null 2>&1; then
		echo "firestore.sh: gcloud or java not found; install the Google Cloud CLI with its" >&2
		echo "  cloud-firestore-emulator component, and Java 17 or newer" >&2
		# Outside CI the Firestore tests then skip, saying how to start it;
		# under CI=true they must not, so the set-up fails here.
		if [ "${CI:-}" = true ]; then
			return 1
		fi
		return 0
	fi
	mkdir -p "$rundir"
	# setsid: the emulator outlives this script and make's process group;
	# stop kills the whole session (gcloud runs a java child).
	setsid gcloud emulators firestore start --quiet --host-port="$host:$port" \
		>"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	if wait_started 240 0.5 "$pidfile" answers; then
		echo "Firestore emulator listening on $host:$port (log $logfile)" >&2
		return 0
	fi
	log "the Firestore emulator did not start on $host:$port; log:" >&2
	cat "$logfile" >&2 || true
	stop
	return 1
}

# The session id is the pid setsid gave gcloud: stop kills gcloud and the
# java emulator it started, nothing else.
stop() { stop_pidfile "$pidfile" 100 group; }

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) answers ;;
*)
	echo "usage: $0 [start|stop|status]" >&2
	exit 2
	;;
esac
