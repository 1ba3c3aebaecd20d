#!/usr/bin/env bash
# Starts (or stops) the Redis Cluster that test/reliability's resharding
# rows migrate slots of: three masters on loopback ports 7241-7243
# (scripts/redis-cluster.sh with its own ports and folder), and a fourth
# cluster-mode node on 7244 that belongs to no cluster yet: the rebalance
# row adds it as a master (CLUSTER MEET) and moves slots to it. Separate
# from the 7101-7103 Cluster other tests share, because the rows move its
# slots and change its membership.
#
#   bash scripts/redis-reshard.sh start   # idempotent: a healthy set is left alone
#   bash scripts/redis-reshard.sh fresh   # stop, then start: the initial layout again
#   bash scripts/redis-reshard.sh stop
#   bash scripts/redis-reshard.sh status
#
# Environment: IDEM_REDIS_RESHARD_PORTS (default "7241 7242 7243"),
# IDEM_REDIS_RESHARD_SPARE (default 7244), IDEM_REDIS_RESHARD_DIR
# (default /tmp/idemgen-redis-reshard). Installs redis-server/redis-cli
# with apt-get when they are missing.
set -euo pipefail

PORTS=(${IDEM_REDIS_RESHARD_PORTS:-7241 7242 7243})
SPARE=${IDEM_REDIS_RESHARD_SPARE:-7244}
DIR=${IDEM_REDIS_RESHARD_DIR:-/tmp/idemgen-redis-reshard}
HOST=127.0.0.1
HERE=$(dirname "${BASH_SOURCE[0]}")

LOG_NAME=redis-reshard
# log, ensure_redis, cli, up, wait_up, stop_ports, retry.
. "$HERE/lib.sh"

cluster() {
	IDEM_REDIS_CLUSTER_PORTS="${PORTS[*]}" IDEM_REDIS_CLUSTER_DIR="$DIR" bash "$HERE/redis-cluster.sh" "$@"
}

# spare_alone: the spare node answers and knows no other node.
spare_alone() {
	local info
	up "$SPARE" || return 1
	info=$(cli "$SPARE" cluster info 2>/dev/null || true)
	[[ "$info" == *cluster_known_nodes:1$'\r'* || "$info" == *cluster_known_nodes:1$'\n'* ]]
}

start_spare() {
	mkdir -p "$DIR/$SPARE"
	if up "$SPARE"; then
		if ! spare_alone; then
			log "resetting the spare node $SPARE"
			cli "$SPARE" flushall >/dev/null 2>&1 || true
			cli "$SPARE" cluster reset hard >/dev/null
		fi
		return
	fi
	rm -f "$DIR/$SPARE/nodes.conf" "$DIR/$SPARE/dump.rdb"
	redis-server --port "$SPARE" --bind "$HOST" --protected-mode no \
		--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
		--dir "$DIR/$SPARE" --save "" --appendonly no --maxmemory-policy noeviction \
		--daemonize yes --pidfile "$DIR/$SPARE/redis.pid" --logfile "$DIR/$SPARE/redis.log"
	wait_up "$SPARE" "$DIR/$SPARE/redis.log"
}

# healthy: the three masters form a cluster of exactly three nodes (a
# previous rebalance row leaves the spare in it) and the spare is alone.
healthy() {
	cluster status >/dev/null 2>&1 || return 1
	local info
	info=$(cli "${PORTS[0]}" cluster info 2>/dev/null || true)
	[[ "$info" == *cluster_known_nodes:${#PORTS[@]}$'\r'* || "$info" == *cluster_known_nodes:${#PORTS[@]}$'\n'* ]] || return 1
	spare_alone
}

stop() {
	stop_ports "$SPARE"
	rm -rf "${DIR:?}/$SPARE"
	cluster stop
	log "stopped"
}

start() {
	ensure_redis
	if healthy; then
		log "already running on ports ${PORTS[*]} (spare $SPARE)"
		return
	fi
	# Whatever is there (nothing, a set a row changed: slots in
	# migration, the spare a member) makes way for the initial layout.
	stop
	cluster start
	start_spare
	if retry 50 0.1 healthy; then
		log "running on ports ${PORTS[*]} (spare $SPARE)"
		return
	fi
	log "the resharding cluster is not healthy"
	exit 1
}

case "${1:-start}" in
start) start ;;
fresh) stop; start ;;
stop) stop ;;
status) if healthy; then echo ok; else echo down; exit 1; fi ;;
*) echo "usage: $0 start|fresh|stop|status" >&2; exit 2 ;;
esac
