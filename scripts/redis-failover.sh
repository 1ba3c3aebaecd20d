#!/usr/bin/env bash
# Starts (or stops) the Redis deployments with replicas that the failover
# tests kill and promote (runtime/redisstore's failover test,
# test/reliability's failover rows):
#
#   sentinel: primary 7201, replica 7202, three Sentinels 7211-7213
#             monitoring them as "idem-failover" (quorum 2)
#   cluster:  three masters with one replica each on 7221-7226
#             (cluster bus 17221-17226)
#
#   bash scripts/redis-failover.sh start [sentinel|cluster|all]   # idempotent
#   bash scripts/redis-failover.sh stop [sentinel|cluster|all]
#   bash scripts/redis-failover.sh status [sentinel|cluster|all]
#
# start is also how a test brings back a node it SIGKILLed: a missing data
# node is started again as a replica of the current primary (Sentinel) or
# with its nodes.conf, so it rejoins as the replica of the node promoted in
# its place (Cluster). Nothing is saved (--save "", no AOF), but a replica
# writes the RDB of each full sync it receives to its dir (repl-diskless-load
# is off by default): a restarted node comes back with that old data set, or
# nothing, and has the current data only once its resync from the current
# primary is done.
#
# Environment: IDEM_REDIS_FAILOVER_DIR (default /tmp/idemgen-redis-failover);
# IDEM_REDIS_FAILOVER_HOLD=1 starts a node brought back this way as a
# replica that cannot be promoted (Sentinel: replica-priority 0; Cluster:
# cluster-replica-no-failover yes), so that no failover, requested or not,
# can land on it before it holds the data. Whoever restarted it makes it
# promotable again once it is in sync (CONFIG SET; see
# test/reliability/failover_test.go). Without it a restarted node is
# promotable at once, without the current data, as Redis's defaults have it.
set -euo pipefail

DIR=${IDEM_REDIS_FAILOVER_DIR:-/tmp/idemgen-redis-failover}
HOST=127.0.0.1
NAME=idem-failover
S_DATA=(7201 7202)
S_SENT=(7211 7212 7213)
C_PORTS=(7221 7222 7223 7224 7225 7226)

LOG_NAME=redis-failover
# log, ensure_redis, cli, up, wait_up, stop_ports, retry, cluster_*.
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

common=(--bind "$HOST" --protected-mode no --save "" --appendonly no --maxmemory-policy noeviction --daemonize yes)

# --- Sentinel set ---

sentinel_master() {
	# The primary the Sentinels agree on now, "host port", or nothing.
	local p out
	for p in "${S_SENT[@]}"; do
		out=$(cli "$p" sentinel get-master-addr-by-name "$NAME" 2>/dev/null || true)
		if [ "$(wc -l <<<"$out")" = 2 ] && [[ "$out" == 127.0.0.1* ]]; then
			echo $out
			return
		fi
	done
}

sentinel_healthy() {
	local p info m
	for p in "${S_DATA[@]}" "${S_SENT[@]}"; do up "$p" || return 1; done
	m=$(sentinel_master)
	[ -n "$m" ] || return 1
	info=$(cli "${m#* }" info replication 2>/dev/null || true)
	[[ "$info" == *role:master* && "$info" == *connected_slaves:1* && "$info" == *state=online* ]] || return 1
	for p in "${S_SENT[@]}"; do
		info=$(cli "$p" sentinel master "$NAME" 2>/dev/null || true)
		# Every Sentinel knows the other two and the replica.
		[[ "$info" == *$'num-other-sentinels\n2'* && "$info" == *$'num-slaves\n1'* ]] || return 1
	done
}

sentinel_start() {
	local p m args
	m=$(sentinel_master)
	for p in "${S_DATA[@]}"; do
		up "$p" && continue
		mkdir -p "$DIR/sentinel/$p"
		args=()
		if [ -n "$m" ] && [ "${m#* }" != "$p" ]; then
			args=(--replicaof ${m% *} ${m#* })
			[ "${IDEM_REDIS_FAILOVER_HOLD:-}" != 1 ] || args+=(--replica-priority 0)
		elif [ -z "$m" ] && [ "$p" != "${S_DATA[0]}" ]; then
			args=(--replicaof "$HOST" "${S_DATA[0]}")
		fi
		redis-server --port "$p" "${common[@]}" --dir "$DIR/sentinel/$p" \
			--pidfile "$DIR/sentinel/$p/redis.pid" --logfile "$DIR/sentinel/$p/redis.log" "${args[@]}"
		wait_up "$p" "$DIR/sentinel/$p/redis.log"
	done
	m=$(sentinel_master)
	[ -n "$m" ] || m="$HOST ${S_DATA[0]}"
	for p in "${S_SENT[@]}"; do
		up "$p" && continue
		mkdir -p "$DIR/sentinel/$p"
		local conf="$DIR/sentinel/$p/sentinel.conf"
		if [ ! -f "$conf" ]; then
			cat >"$conf" <<EOF
port $p
bind $HOST
protected-mode no
dir $DIR/sentinel/$p
logfile $DIR/sentinel/$p/sentinel.log
pidfile $DIR/sentinel/$p/sentinel.pid
daemonize yes
sentinel monitor $NAME $m 2
sentinel down-after-milliseconds $NAME 1000
sentinel failover-timeout $NAME 2000
sentinel parallel-syncs $NAME 1
EOF
		fi
		redis-server "$conf" --sentinel
		wait_up "$p" "$DIR/sentinel/$p/sentinel.log"
	done
	if retry 200 0.1 sentinel_healthy; then
		log "sentinel set running: primary $(sentinel_master | cut -d' ' -f2), Sentinels ${S_SENT[*]}"
		return
	fi
	log "sentinel set did not become healthy (primary: $(sentinel_master))"
	exit 1
}

# --- Cluster with replicas ---

cluster_healthy() {
	local p info nodes
	for p in "${C_PORTS[@]}"; do
		up "$p" || return 1
		info=$(cli "$p" cluster info 2>/dev/null || true)
		[[ "$info" == *cluster_state:ok* && "$info" == *cluster_known_nodes:6* ]] || return 1
	done
	nodes=$(cli "${C_PORTS[0]}" cluster nodes 2>/dev/null || true)
	# Flags are the third field ("myself,master", "slave", "master,fail").
	# "fail" and "fail?" are flags of their own; "nofailover" is not one.
	[ "$(awk '$3 ~ /master/' <<<"$nodes" | wc -l)" = 3 ] && [ "$(awk '$3 ~ /slave/' <<<"$nodes" | wc -l)" = 3 ] &&
		[ "$(awk '$3 ~ /(^|,)fail/' <<<"$nodes" | wc -l)" = 0 ] || return 1
	# Every replica is in sync with its master.
	for p in "${C_PORTS[@]}"; do
		info=$(cli "$p" info replication 2>/dev/null || true)
		if [[ "$info" == *role:slave* ]]; then
			[[ "$info" == *master_link_status:up* ]] || return 1
		fi
	done
}

cluster_node() {
	local p=$1 hold=()
	mkdir -p "$DIR/cluster/$p"
	# A node with a nodes.conf is one coming back: it rejoins as a replica.
	if [ "${IDEM_REDIS_FAILOVER_HOLD:-}" = 1 ] && [ -f "$DIR/cluster/$p/nodes.conf" ]; then
		hold=(--cluster-replica-no-failover yes)
	fi
	redis-server --port "$p" "${common[@]}" --dir "$DIR/cluster/$p" \
		--cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 2000 \
		--cluster-replica-validity-factor 0 "${hold[@]}" \
		--pidfile "$DIR/cluster/$p/redis.pid" --logfile "$DIR/cluster/$p/redis.log"
	wait_up "$p" "$DIR/cluster/$p/redis.log"
}

cluster_start() {
	local p fresh=1
	if cluster_healthy; then
		log "cluster running on ports ${C_PORTS[*]}"
		return
	fi
	for p in "${C_PORTS[@]}"; do
		# A node that was SIGKILLed keeps its nodes.conf and rejoins.
		up "$p" || cluster_node "$p"
	done
	local info
	info=$(cli "${C_PORTS[0]}" cluster info)
	if [[ "$info" != *cluster_known_nodes:6* ]]; then
		log "creating the cluster"
		cluster_reset "${C_PORTS[@]}"
		cluster_create "$DIR/cluster/create.log" 1 "${C_PORTS[@]}"
	fi
	if retry 300 0.1 cluster_healthy; then
		log "cluster running on ports ${C_PORTS[*]}"
		return
	fi
	log "cluster did not become healthy"
	cli "${C_PORTS[0]}" cluster nodes >&2 || true
	exit 1
}

what=${2:-all}
case "${1:-start}" in
start)
	ensure_redis
	mkdir -p "$DIR/sentinel" "$DIR/cluster"
	[ "$what" = cluster ] || sentinel_start
	[ "$what" = sentinel ] || cluster_start
	;;
stop)
	if [ "$what" != cluster ]; then stop_ports "${S_SENT[@]}" "${S_DATA[@]}"; rm -rf "$DIR/sentinel"; fi
	if [ "$what" != sentinel ]; then stop_ports "${C_PORTS[@]}"; rm -rf "$DIR/cluster"; fi
	log "stopped $what"
	;;
status)
	ok=1
	if [ "$what" != cluster ]; then sentinel_healthy || ok=0; fi
	if [ "$what" != sentinel ]; then cluster_healthy || ok=0; fi
	if [ $ok = 1 ]; then echo ok; else echo down; exit 1; fi
	;;
*) echo "usage: $0 start|stop|status [sentinel|cluster|all]" >&2; exit 2 ;;
esac
