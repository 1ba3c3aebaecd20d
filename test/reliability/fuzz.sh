#!/usr/bin/env bash
# Runs every reliability fuzz target one after the other (the machine is
# small: one fuzz worker at a time) for FUZZTIME each (default 5m) and
# appends one line per target to $FUZZLOG (default /tmp/idem-fuzz.log):
# the command, the result and the duration. New interesting inputs stay in
# the Go build cache; a failing input is written to the package's
# testdata/fuzz directory by `go test` itself, ready to commit as a
# regression seed. FUZZTIME may also be a count of executions (200000x):
# on Go 1.26 a timed run can end in a bare "context deadline exceeded"
# with no input written, a race in Go's fuzz coordinator
# (go.dev/issue/75804, fixed in Go 1.27); a real failure writes its input.
set -u
cd "$(dirname "$0")/../.."
FUZZTIME=${FUZZTIME:-5m}
FUZZLOG=${FUZZLOG:-/tmp/idem-fuzz.log}
TARGETS=${TARGETS:-"FuzzKeyBuilder:./test/reliability FuzzParseDirectives:./generator FuzzDecodeRecord:./runtime/redisstore FuzzDecodeRecord:./runtime/filestore FuzzDecodeRecordValidCRC:./runtime/filestore FuzzRowCheck:./runtime/pgstore"}
status=0
for t in $TARGETS; do
	name=${t%%:*} pkg=${t#*:}
	cmd="go test -run '^\$' -fuzz '^${name}\$' -fuzztime $FUZZTIME -parallel 1 $pkg"
	start=$(date +%s)
	out=$(go test -run '^$' -fuzz "^${name}\$" -fuzztime "$FUZZTIME" -parallel 1 "$pkg" 2>&1)
	rc=$?
	end=$(date +%s)
	execs=$(printf '%s\n' "$out" | grep -o 'execs: [0-9]*' | tail -1 | cut -d' ' -f2)
	res=PASS
	[ $rc -eq 0 ] || { res=FAIL; status=1; }
	printf '%s\t%s\t%s\t%ss\texecs=%s\t%s\n' "$(date -u +%FT%TZ)" "$res" "$name $pkg" "$((end - start))" "${execs:-?}" "$cmd" >>"$FUZZLOG"
	[ $rc -eq 0 ] || printf '%s\n' "$out" | tail -40 >>"$FUZZLOG"
done
exit $status
