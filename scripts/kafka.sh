#!/usr/bin/env bash
# Starts kfake (franz-go's in-memory implementation of the Kafka wire
# protocol, tools/kfake) for the runtime/idemkafka tests and
# examples/kafkaconsumer: three brokers on loopback ports, in the
# background. Idempotent: when the first port already answers, it does
# nothing. It is not Apache Kafka; docs/QUEUES.md says what that means.
#
#   scripts/kafka.sh [start]   build tools/kfake and start it on $KAFKA_PORTS
#   scripts/kafka.sh stop      stop the instance this script started
#   scripts/kafka.sh status    exit 0 when the first port answers
#
# Environment: KAFKA_PORTS (default 9092,9093,9094). Tests find the brokers
# through IDEM_KAFKA_BROKERS (default 127.0.0.1:9092).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
host=127.0.0.1
ports=${KAFKA_PORTS:-9092,9093,9094}
port=${ports%%,*}
rundir=${KAFKA_RUNDIR:-${TMPDIR:-/tmp}/idemgen-kfake}
pidfile=$rundir/$port.pid
logfile=$rundir/$port.log
bin=$rundir/kfake
LOG_NAME=kafka.sh
# log, retry, wait_started, stop_pidfile.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

answers() { (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; }

start() {
	if answers; then
		return 0
	fi
	mkdir -p "$rundir"
	# Built from its own module (tools/kfake/go.mod): the kfake dependency
	# stays out of every module a user imports.
	(cd "$root/tools/kfake" && GOWORK=off go build -o "$bin" .)
	# setsid: the server outlives this script and make's process group.
	setsid "$bin" -ports "$ports" >"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
	if wait_started 100 0.1 "$pidfile" answers; then
		echo "kfake (Kafka protocol) listening on $ports at $host (log $logfile)" >&2
		return 0
	fi
	log "kfake did not start on $host:$ports; log:"
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
