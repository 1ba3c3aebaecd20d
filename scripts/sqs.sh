#!/usr/bin/env bash
# Starts sqsemu, an SQS-compatible server (goaws v0.4.5 behind a front that
# speaks the AWS JSON protocol of the Go SDK v2: tools/sqsemu), for the
# runtime/idemsqs tests and examples/sqsconsumer: in memory, in the
# background, on a loopback port. Idempotent: when the port already
# answers, it does nothing. Builds bin/sqsemu with `go install` (modules
# from the Go module proxy) when it is missing or older than its source.
#
#   scripts/sqs.sh [start]   start (default) on $SQS_PORT (4100)
#   scripts/sqs.sh stop      stop the instance this script started
#   scripts/sqs.sh status    exit 0 when the port answers
#
# Tests find it through IDEM_SQS_ENDPOINT (default http://127.0.0.1:4100).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
host=${SQS_HOST:-127.0.0.1}
port=${SQS_PORT:-4100}
rundir=${SQS_RUNDIR:-${TMPDIR:-/tmp}/idemgen-sqs}
pidfile=$rundir/$port.pid
logfile=$rundir/$port.log
bin=$root/bin/sqsemu
LOG_NAME=sqs.sh
# log, retry, wait_started, stop_pidfile.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

answers() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

install() {
	if [ -x "$bin" ] && [ -z "$(find "$root/tools/sqsemu" -newer "$bin" -type f)" ]; then
		return
	fi
	log "building bin/sqsemu (tools/sqsemu: goaws v0.4.5 + JSON protocol)"
	(cd "$root/tools/sqsemu" && GOWORK=off GOBIN="$root/bin" go install .)
}

start() {
	if answers; then
		return 0
	fi
	install
	mkdir -p "$rundir"
	# setsid: the server outlives this script and make's process group.
	setsid "$bin" -addr "$host:$port" >"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	if wait_started 100 0.1 "$pidfile" answers; then
		echo "sqsemu listening on http://$host:$port (log $logfile)" >&2
		return 0
	fi
	log "sqsemu did not start on $host:$port; log:"
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
