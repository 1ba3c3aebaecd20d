#!/usr/bin/env bash
# The memory store against the peer, faustbrian/go-idempotency, in
# alternated rounds: each round runs this tree's wrapper benchmarks, then
# the peer's, so both see the same machine; the ratio is taken per round
# and the median of the rounds is what docs/BENCHMARKS.md reports.
#
#   scripts/peer-rounds.sh PEER_DIR [ROUNDS]
#
# PEER_DIR is a checkout of github.com/faustbrian/go-idempotency (it is
# not on the Go module proxy). BENCHTIME sets the calls per benchmark
# (default 400000x). Run it on a quiet machine: the ratio moves with load.
set -euo pipefail
peer=$(cd "${1:?usage: scripts/peer-rounds.sh PEER_DIR [ROUNDS]}" && pwd)
rounds=${2:-21}
benchtime=${BENCHTIME:-400000x}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$root" && go test -c -o "$tmp/idem.test" ./runtime/idem)
(cd "$peer" && go test -c -o "$tmp/peer.test" ./memory)
ns() { awk '/ns\/op/ { for (i = 1; i < NF; i++) if ($(i+1) == "ns/op") print $1, $i }'; }
for r in $(seq "$rounds"); do
	(cd "$root/runtime/idem" && "$tmp/idem.test" -test.run '^$' -test.benchtime "$benchtime" \
		-test.bench 'BenchmarkFirstExecutionWrapper/idem_memory$|BenchmarkReplayWrapper/begin_helper$') | ns | sed "s/^/$r /"
	(cd "$peer/memory" && "$tmp/peer.test" -test.run '^$' -test.benchtime "$benchtime" \
		-test.bench 'BenchmarkAcquireCompleteLifecycle$|BenchmarkReplay$') | ns | sed "s/^/$r /"
done > "$tmp/rounds"
# One line a round: first execution and replay, ours, the peer's, ratios.
awk '
	$2 ~ /^BenchmarkFirstExecutionWrapper/ { fe[$1] = $3 }
	$2 ~ /^BenchmarkReplayWrapper/         { rp[$1] = $3 }
	$2 ~ /^BenchmarkAcquireCompleteLifecycle/ { pf[$1] = $3 }
	$2 ~ /^BenchmarkReplay(-[0-9]+)?$/     { pr[$1] = $3 }
	END { for (r in fe) printf "%d %s %s %s %s %.3f %.3f\n", r, fe[r], pf[r], rp[r], pr[r], fe[r]/pf[r], rp[r]/pr[r] }
' "$tmp/rounds" | sort -n > "$tmp/ratios"
echo "round first_ns peer_first_ns replay_ns peer_replay_ns first_x replay_x"
cat "$tmp/ratios"
median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2 }'; }
echo "median first execution x peer: $(cut -d' ' -f6 "$tmp/ratios" | median)"
echo "median replay x peer:          $(cut -d' ' -f7 "$tmp/ratios" | median)"
