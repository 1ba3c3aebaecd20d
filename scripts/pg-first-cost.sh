#!/usr/bin/env bash
# A first execution's PostgreSQL cost against its floor, with pgbench and
# no Go in the way: the store's two statements (claimNew and finishPlain
# of runtime/pgstore/queries.go, schema version 6, as pgx runs them:
# prepared, one transaction each) against a raw INSERT ... ON CONFLICT DO
# NOTHING (one commit) and a raw INSERT + UPDATE (two commits, the least
# a record written before and after the call costs). Keys are hex hashes,
# as the store's are. docs/BENCHMARKS.md ("Where a first execution's
# server CPU goes") has the results.
#
#   scripts/pg-first-cost.sh cpu [ROUNDS]   # backend CPU per op, 32 clients, closed loop
#   scripts/pg-first-cost.sh p99 [ROUNDS]   # p50/p99 at a fixed rate, open loop (pgbench -R)
#
# Needs psql and pgbench, and the server on this machine (it reads the
# backends' /proc/<pid>/schedstat). PGURL (default
# postgres://127.0.0.1:5432/test) is the database; the schema pgcost_x is
# made anew for every measurement and dropped at the end. RATE_RAW and
# RATE_PAIR (default 4500 and 2150 operations/s) are the open loop's rates:
# half of what each reached at saturation here.
set -euo pipefail
mode=${1:?usage: scripts/pg-first-cost.sh cpu|p99 [ROUNDS]}
rounds=${2:-3}
url=${PGURL:-postgres://127.0.0.1:5432/test}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"; psql -q "$url" -c "DROP SCHEMA IF EXISTS pgcost_x CASCADE" 2>/dev/null || true' EXIT

setup() {
	psql -q -v ON_ERROR_STOP=1 "$url" >/dev/null 2>&1 <<'SQL'
DROP SCHEMA IF EXISTS pgcost_x CASCADE;
CREATE SCHEMA pgcost_x;
CREATE TABLE pgcost_x.rec (
 key text COLLATE "C" PRIMARY KEY, state smallint NOT NULL, owner bytea NOT NULL, fence bigint NOT NULL,
 fingerprint bytea NOT NULL, result bytea, lease_until timestamptz NOT NULL, expires_at timestamptz NOT NULL,
 updated_at timestamptz NOT NULL, took_over boolean NOT NULL DEFAULT false, waiters boolean NOT NULL DEFAULT false,
 completed_in_tx boolean NOT NULL DEFAULT false, format smallint NOT NULL DEFAULT 1) WITH (fillfactor = 90);
ALTER TABLE pgcost_x.rec ADD COLUMN claimed_at timestamptz;
ALTER TABLE pgcost_x.rec ADD COLUMN step_names bytea[];
ALTER TABLE pgcost_x.rec ADD COLUMN step_data bytea[];
ALTER TABLE pgcost_x.rec ADD COLUMN sweep_at timestamptz NOT NULL DEFAULT '-infinity';
CREATE INDEX rec_sweep_at_idx ON pgcost_x.rec (sweep_at);
CREATE TABLE pgcost_x.raw (key text COLLATE "C" PRIMARY KEY, val bytea);
SQL
}

# The key: pgbench's prepared mode turns every :name into a parameter,
# even inside a literal, so the prefix has no colon.
key="'capfn-v0-' || md5(CAST(:k AS text))"
val32="'\\x0102030405060708090a0b0c0d0e0f100102030405060708090a0b0c0d0e0f10'::bytea"
owner="'\\x000102030405060708090a0b0c0d0e0f'::bytea"
ts="coalesce(NULL::timestamptz, statement_timestamp())"
cat >"$tmp/raw.sql" <<EOF
\\set k random(1, 1000000000000)
INSERT INTO pgcost_x.raw (key, val) VALUES ($key, $val32 || $val32 || $val32 || $val32) ON CONFLICT (key) DO NOTHING;
EOF
cat >"$tmp/pair.sql" <<EOF
\\set k random(1, 1000000000000)
INSERT INTO pgcost_x.raw (key, val) VALUES ($key, '\\x'::bytea) ON CONFLICT (key) DO NOTHING;
UPDATE pgcost_x.raw SET val = $val32 WHERE key = $key;
EOF
cat >"$tmp/store.sql" <<EOF
\\set k random(1, 1000000000000)
INSERT INTO pgcost_x.rec (key, state, owner, fence, fingerprint, result, lease_until, expires_at, updated_at, claimed_at, took_over, completed_in_tx, format, sweep_at)
VALUES ($key, 1, $owner, 1, $owner || $owner, NULL, $ts + 30000000::bigint * interval '1 microsecond',
 $ts + (30000000::bigint + 86400000000::bigint) * interval '1 microsecond', $ts, $ts, false, false, 1,
 $ts + 86400000000::bigint * interval '1 microsecond')
ON CONFLICT (key) DO NOTHING RETURNING lease_until;
UPDATE pgcost_x.rec SET state = 2::smallint, result = $val32,
 step_names = CASE WHEN 2::smallint = 4 THEN step_names END, step_data = CASE WHEN 2::smallint = 4 THEN step_data END,
 expires_at = $ts + 86400000000::bigint * interval '1 microsecond',
 sweep_at = least(sweep_at, $ts + 86400000000::bigint * interval '1 microsecond'), updated_at = $ts
WHERE key = $key AND owner = $owner AND fence = 1 AND state = 1
RETURNING (CASE WHEN waiters THEN pg_notify('idemx', md5(key)) IS NOT NULL ELSE true END)::int::smallint;
EOF

# cpu NAME TABLE: backend CPU per row written to TABLE by 32 clients,
# counted from 2 s after the start to 1 s before the end of a 10 s run.
cpu() {
	setup
	local app="pgcost_$$_$1" a s1=0 s2=0 r1 r2 p
	PGAPPNAME=$app pgbench -n -M prepared -c 32 -j 2 -T 10 -f "$tmp/$1.sql" "$url" >"$tmp/out" 2>&1 &
	local pb=$!
	sleep 2
	local pids
	pids=$(psql -At "$url" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$app'")
	for p in $pids; do read -r a _ <"/proc/$p/schedstat" && s1=$((s1 + a)); done
	r1=$(psql -At "$url" -c "SELECT count(*) FROM pgcost_x.$2")
	sleep 7
	for p in $pids; do read -r a _ <"/proc/$p/schedstat" && s2=$((s2 + a)); done
	r2=$(psql -At "$url" -c "SELECT count(*) FROM pgcost_x.$2")
	wait $pb
	echo "$1: $((r2 - r1)) ops in 7 s, backend CPU $(((s2 - s1) / 1000 / (r2 - r1))) µs/op"
}

# p99 NAME RATE: p50 and p99 of 32 clients at RATE ops/s for 10 s,
# each op's latency counted from its scheduled start (pgbench -R).
p99() {
	setup
	mkdir -p "$tmp/log" && rm -f "$tmp"/log/*
	(cd "$tmp/log" && pgbench -n -M prepared -c 32 -j 2 -T 10 -R "$2" -l -f "$tmp/$1.sql" "$url" >/dev/null 2>&1)
	cat "$tmp"/log/pgbench_log.* | awk '{print $3 + $7}' | sort -n >"$tmp/lat"
	local n
	n=$(wc -l <"$tmp/lat")
	awk -v n="$n" -v name="$1" -v rate="$2" \
		'NR == int(n/2) {p50 = $1} NR == int(n*99/100) {p99 = $1} END {printf "%s at %d/s: p50 %.2f ms, p99 %.2f ms\n", name, rate, p50/1000, p99/1000}' "$tmp/lat"
}

for r in $(seq "$rounds"); do
	echo "round $r"
	case $mode in
	cpu) cpu raw raw; cpu pair raw; cpu store rec ;;
	p99) p99 raw "${RATE_RAW:-4500}"; p99 pair "${RATE_PAIR:-2150}"; p99 store "${RATE_PAIR:-2150}" ;;
	*) echo "unknown mode $mode" >&2; exit 2 ;;
	esac
done
