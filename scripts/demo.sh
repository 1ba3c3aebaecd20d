#!/usr/bin/env bash
# make demo: from the annotation to the generated wrapper to what it does
# at run time, on the embedded memory store. Needs only Go.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
src=examples/quickstart/billing.go
gen=examples/quickstart/idem_gen.go
if [ -t 1 ]; then bold=$'\033[1m' plain=$'\033[0m'; else bold= plain=; fi
step() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }

step "1/4 build idemgen (bin/idemgen) and the quickstart; a first run also downloads and compiles dependencies"
t0=$SECONDS
$GO build -o bin/idemgen ./cmd/idemgen
echo "   bin/idemgen built ($((SECONDS - t0)) s)"
$GO build -o bin/quickstart ./examples/quickstart &
build=$!

step "2/4 the annotation you write ($src)"
# The doc comment and signature of CreateInvoice: from its first comment
# line to the line that opens its body.
awk '/^\/\/ CreateInvoice /{p=1} p{print "   " $0} p&&/^func /{exit}' "$src"

step "3/4 go generate runs idemgen, which writes $gen"
bin/idemgen ./examples/quickstart
echo "   the wrapper it generated (a method of Idempotent, built with NewIdempotent(guard)):"
awk '/^\/\/ CreateInvoice is /{p=1} p{print "   " $0} p&&/^}/{exit}' "$gen"
awk '/^func \(x \*Idempotent\) beginCreateInvoice/{p=1} p{print "   " $0} p&&/^}/{exit}' "$gen"
echo "   the key is req.CustomerID and req.OrderID, read by that generated code; the"
echo "   whole request is fingerprinted, and the result is stored by a generated codec."

wait "$build"
echo "   quickstart built ($((SECONDS - t0)) s since start)"
step "4/4 run it: bin/quickstart (go run ./examples/quickstart)"
bin/quickstart
