#!/usr/bin/env bash
# Starts (or stops) the 3-master Redis Cluster that runtime/redisstore's
# tests use, on loopback ports 7101-7103 (cluster bus 17101-17103).
#
#   bash scripts/redis-cluster.sh start   # idempotent: a healthy cluster is left alone
#   bash scripts/redis-cluster.sh stop
#   bash scripts/redis-cluster.sh status
#
# Environment: IDEM_REDIS_CLUSTER_PORTS (default "7101 7102 7103"),
# IDEM_REDIS_CLUSTER_DIR (default /tmp/idemgen-redis-cluster).
# Installs redis-server/redis-cli with apt-get when they are missing.
set -euo pipefail

PORTS=(${IDEM_REDIS_CLUSTER_PORTS:-7101 7102 7103})
DIR=${IDEM_REDIS_CLUSTER_DIR:-/tmp/idemgen-redis-cluster}
HOST=127.0.0.1

LOG_NAME=redis-cluster
# log, ensure_redis, cli, up, wait_up, stop_ports, retry, cluster_*.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

healthy() {
	local p info nodes
	for p in "${PORTS[@]}"; do
		up "$p" || return 1
		info=$(cli "$p" cluster info 2>/dev/null || true)
		[[ "$info" == *cluster_state:ok* ]] || return 1
	done
	# Every node must know all the masters (a stale half-formed cluster is not ok).
	nodes=$(cli "${PORTS[0]}" cluster nodes 2>/dev/null || true)
	[ "$(grep -c master <<<"$nodes")" -ge "${#PORTS[@]}" ]
}

start_node() {
	local p=$1
	mkdir -p "$DIR/$p"
	if up "$p"; then
		return
	fi
	# A leftover nodes.conf from an earlier cluster would make the node
	# rejoin a cluster that no longer exists: start from scratch.
	rm -f "$DIR/$p/nodes.conf" "$DIR/$p/dump.rdb" "$DIR/$p"/appendonly*
	rm -rf "$DIR/$p/appendonlydir"
	redis-server --port "$p" --bind "$HOST" --protected-mode no \
		--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
		--dir "$DIR/$p" --save "" --appendonly no --maxmemory-policy noeviction \
		--daemonize yes --pidfile "$DIR/$p/redis.pid" --logfile "$DIR/$p/redis.log"
	wait_up "$p" "$DIR/$p/redis.log"
}

stop() {
	stop_ports "${PORTS[@]}"
	# Only these ports' folders: a cluster on other ports may share $DIR,
	# and a running cluster node exits when its nodes.conf vanishes.
	for p in "${PORTS[@]}"; do rm -rf "${DIR:?}/$p"; done
	rmdir "$DIR" 2>/dev/null || true
	log "stopped"
}

start() {
	ensure_redis
	if healthy; then
		log "already running on ports ${PORTS[*]}"
		return
	fi
	local p
	for p in "${PORTS[@]}"; do
		start_node "$p"
	done
	# Nodes that are up but not a healthy cluster together: reset and create.
	local fresh=1
	for p in "${PORTS[@]}"; do
		local info
		info=$(cli "$p" cluster info)
		if [ "$(cli "$p" dbsize)" != 0 ] || [[ "$info" != *cluster_known_nodes:1$'\r'* && "$info" != *cluster_known_nodes:1$'\n'* ]]; then
			fresh=0
		fi
	done
	if [ $fresh = 0 ]; then
		log "resetting nodes of a broken cluster"
		cluster_reset "${PORTS[@]}"
	fi
	cluster_create "$DIR/create.log" 0 "${PORTS[@]}"
	if retry 100 0.1 healthy; then
		log "running on ports ${PORTS[*]}"
		return
	fi
	log "cluster did not reach cluster_state:ok"
	for p in "${PORTS[@]}"; do cli "$p" cluster info | head -1 >&2; done
	exit 1
}

case "${1:-start}" in
start) start ;;
stop) stop ;;
status) if healthy; then echo ok; else echo down; exit 1; fi ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
