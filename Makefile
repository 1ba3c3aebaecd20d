# idemgen: the two commands a newcomer needs are `make demo` and `make test`.
GO ?= go
export CGO_ENABLED = 1

.PHONY: test unit services deps lint bench

# Every module of the repository, in the order go.work lists them
# (internal/layout fails if a go.mod is missing from go.work). Each is
# tested, vetted and tidied with GOWORK=off: on its own go.mod, as the
# users of that module build it.
MODULES := $(shell $(GO) work edit -json | sed -n 's/.*"DiskPath": "\(.*\)".*/\1/p')
EACH_MODULE = failed=; for m in $(MODULES); do echo "== module $$m"; (cd $$m && GOWORK=off $(1)) || failed="$$failed $$m"; done; \
	test -z "$$failed" || { echo "FAILED in module(s):$$failed"; exit 1; }

# Start the extra servers tests need (the Redis Cluster, the Redis
# Sentinel set and Cluster with replicas the failover tests kill, the
# Cluster the resharding rows move slots of (which they restart afresh
# and stop), dynalite,
# the Firestore emulator: about 20 s before it answers; kfake, the
# Kafka-protocol broker of runtime/idemkafka; sqsemu, the SQS server of
# runtime/idemsqs). The machine's PostgreSQL, Redis, RabbitMQ and NATS are
# expected to be running already (base-services.sh restarts them).
services:
	scripts/base-services.sh
	scripts/tools.sh
	scripts/dynalite.sh
	scripts/firestore.sh
	scripts/kafka.sh
	scripts/sqs.sh
	bash scripts/redis-cluster.sh start
	bash scripts/redis-failover.sh start
	bash scripts/redis-reshard.sh start

# Every module's dependencies in the module cache: tests that build
# scratch modules offline (GOPROXY=off, generator/behaviour_test.go) need
# other modules' dependencies there before those modules' own tests run.
deps:
	@$(call EACH_MODULE,$(GO) mod download)

# All tests of every module, race detector on; then the allocation
# bounds, which only hold without it (it allocates on its own, and
# sync.Pool drops items at random under it).
test: services deps
	@$(call EACH_MODULE,$(GO) test -race -count=1 -timeout 20m ./...)
	GOWORK=off $(GO) test -count=1 -run '^TestWrapperAllocations$$' ./runtime/idem
	$(MAKE) fuzz-short

# Short fuzz runs of the key rules (docs/GENERATOR.md, "What makes two
# calls the same"): values of the committed random types, and random
# value sequences read back from their key bytes. The budgets are counts
# of executions, not durations: Go 1.26's fuzz coordinator can fail a
# timed run with "context deadline exceeded" when a worker is still
# running as the time ends (go.dev/issue/75804, fixed in Go 1.27).
.PHONY: fuzz-short keyprop reach
fuzz-short:
	GOWORK=off $(GO) test -run '^$$' -fuzz '^FuzzKeyProperty$$' -fuzztime 25000x ./internal/keyprop/sample
	GOWORK=off $(GO) test -run '^$$' -fuzz '^FuzzKeyEncodingSelfDelimiting$$' -fuzztime 100000x ./runtime/internal/impl

# The long key property run: 100 packages of fresh random types through
# idemgen, 100 random type graphs whose every generated file must
# type-check, then 500,000 fuzz executions on the committed sample
# (about ten minutes on two cores).
keyprop:
	IDEM_KEYPROP_SEEDS=100 GOWORK=off $(GO) test -count=1 -timeout 60m -v -run '^TestRandomTypes$$' ./internal/keyprop
	IDEM_TYPEGRAPH_SEEDS=100 GOWORK=off $(GO) test -count=1 -timeout 60m -v -run '^TestRandomTypeGraphs$$' ./generator
	GOWORK=off $(GO) test -run '^$$' -fuzz '^FuzzKeyProperty$$' -fuzztime 500000x ./internal/keyprop/sample

# Reach on real code: every exported function and method of the SDK
# packages in internal/reach/testdata/sdks.txt, wrapped from a scratch
# module with the plain annotation, then with one round of advice
# (downloads the modules through the Go module proxy).
reach:
	IDEM_REACH=1 GOWORK=off $(GO) test -count=1 -timeout 60m -v -run '^TestReach$$' ./internal/reach

# The root module's tests (generator, core runtime, memory and file
# stores, HTTP and queue layers): no services needed.
unit:
	GOWORK=off $(GO) test -race -count=1 -timeout 20m ./...

# gofmt, go vet, staticcheck and go mod tidy -diff, module by module; and
# idemvet over the examples, which must show how to call wrappers.
lint: idemvet
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); exit 1; }
	@$(call EACH_MODULE,$(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./... && $(GO) mod tidy -diff)
	cd examples && GOWORK=off $(GO) vet -vettool=$(CURDIR)/bin/idemvet ./...

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./runtime/idem

# --- generator (idemgen) ---
.PHONY: demo generate check idemgen idemvet

# Build the generator into bin/.
idemgen:
	$(GO) build -o bin/idemgen ./cmd/idemgen

# Build the vet analyzer into bin/ (bypassed wrappers, stale generated
# files, lost cancellation; go vet -vettool=bin/idemvet ./...).
idemvet:
	$(GO) build -o bin/idemvet ./cmd/idemvet

# From the annotation to the generated wrapper to what it does at run
# time, on the embedded memory store (scripts/demo.sh).
demo:
	@GO=$(GO) scripts/demo.sh

# Regenerate every package's idem_gen.go, in every module.
generate: idemgen
	bin/idemgen $(addsuffix /...,$(MODULES))

# Fail (with a diff) if any generated file is stale or missing.
check: idemgen
	bin/idemgen -check $(addsuffix /...,$(MODULES))

# Capacity model, measured (test/capacity): throughput at saturation with
# the CPU each side used, latency at half load, bytes per record and
# cleanup under writes for every networked store against a raw client
# baseline of the same run; PostgreSQL at 20 million rows (filled with
# SQL, dropped at the end; IDEM_CAPACITY_PG_ROWS=N for a smaller table);
# the memory store's and the Guard's heap. Writes docs/CAPACITY.md. About
# 25 minutes on 2 cores. The short version runs in `make test`.
.PHONY: capacity
capacity:
	scripts/base-services.sh
	scripts/dynalite.sh
	scripts/firestore.sh
	mem=$$(mktemp) && trap 'rm -f $$mem' EXIT && \
	GOWORK=off $(GO) test -count=1 -v -run '^TestRetainedRecordHeap$$' ./runtime/memstore >$$mem && \
	GOWORK=off $(GO) test -count=1 -v -run '^TestGuardMemory$$' ./runtime/idem >>$$mem && \
	cd test && IDEM_CAPACITY=full IDEM_CAPACITY_REPORT=$(CURDIR)/docs/CAPACITY.md IDEM_CAPACITY_MEMORY=$$mem \
	IDEM_CAPACITY_CMD="make capacity  (= IDEM_CAPACITY=full go test -count=1 -timeout 40m -run 'TestCapacity|TestDynamoUnits|TestPostgresAtSize' ./test/capacity, after the memory tests of runtime/memstore and runtime/idem)" \
	$(GO) test -count=1 -timeout 40m -run 'TestCapacity|TestDynamoUnits|TestPostgresAtSize' -v ./capacity

# Reliability evidence: duplicate storms, SIGKILL crashes, SIGSTOP zombies,
# network faults and clock skew against Redis, PostgreSQL, the file store,
# DynamoDB (dynalite) and Firestore (the emulator), full size, from real
# worker processes (test/reliability). Writes docs/RELIABILITY.md; fails if any scenario finds a violation. The short
# version runs in `make test`. Fuzzing: test/reliability/fuzz.sh.
# The variables go on the go command, after the cd: assigned before cd
# they were cd's alone, and go test ran the short version and wrote no
# report.
.PHONY: reliability
reliability:
	scripts/base-services.sh
	scripts/dynalite.sh
	scripts/firestore.sh
	$(MAKE) reliability-brokers
	cd test && IDEM_RELIABILITY=full IDEM_RELIABILITY_REPORT=$(CURDIR)/docs/RELIABILITY.md \
	IDEM_RELIABILITY_APPENDIX=$(CURDIR)/test/reliability/BROKERS.md$(PATHSEP)$(CURDIR)/test/reliability/FUZZING.md \
	IDEM_RELIABILITY_CMD="make reliability  (= IDEM_RELIABILITY=full go test -count=1 -timeout 75m -run 'TestReliability|TestHarness|TestHostile' ./test/reliability)" \
	$(GO) test -count=1 -timeout 75m -run 'TestReliability|TestHarness|TestHostile' -v ./reliability

# Broker redelivery storms (runtime/idemkafka, runtime/idemamqp,
# runtime/idemsqs), full size: worker processes consume through the adapter
# on one shared store (Kafka's storm twice: over Redis, and over PostgreSQL
# with the ledger row committed with the record) while the test SIGKILLs
# them mid-handler, nacks, lets visibility timeouts expire and makes
# consumers leave and join; the ledger must show one side effect per
# message ID. Rewrites
# test/reliability/BROKERS.md, the "Broker redelivery storms" section that
# `make reliability` appends to docs/RELIABILITY.md.
.PHONY: reliability-brokers
PATHSEP := :
BROKERS_REPORT := $(CURDIR)/test/reliability/BROKERS.md
reliability-brokers:
	scripts/base-services.sh
	scripts/kafka.sh
	scripts/sqs.sh
	printf '%s\n\n%s\n\n' '## Broker redelivery storms' \
	  'Command: `make reliability-brokers` (= `IDEM_RELIABILITY=full go test -count=1 -timeout 30m -run ^TestRedeliveryStorm$$ .` in runtime/idemkafka, runtime/idemamqp and runtime/idemsqs, GOWORK=off). Worker processes (the test binary re-executed) consume through the adapter and share one store (for Kafka, Redis in one row and PostgreSQL in another; PostgreSQL for RabbitMQ and SQS); the handler writes the side effect to a ledger (on PostgreSQL, a row inserted in the transaction that completes the idempotency record: exactly-once), and duplicates and lost messages are counted from the ledger per message ID. Kafka runs against kfake, an in-memory Kafka-protocol broker, not Apache Kafka (docs/QUEUES.md).' >$(BROKERS_REPORT)
	cd runtime/idemkafka && GOWORK=off IDEM_RELIABILITY=full IDEM_RELIABILITY_REPORT_BROKERS=$(BROKERS_REPORT) $(GO) test -count=1 -timeout 30m -run '^TestRedeliveryStorm$$' -v .
	cd runtime/idemamqp && GOWORK=off IDEM_RELIABILITY=full IDEM_RELIABILITY_REPORT_BROKERS=$(BROKERS_REPORT) $(GO) test -count=1 -timeout 20m -run '^TestRedeliveryStorm$$' -v .
	cd runtime/idemsqs && GOWORK=off IDEM_RELIABILITY=full IDEM_RELIABILITY_REPORT_BROKERS=$(BROKERS_REPORT) $(GO) test -count=1 -timeout 20m -run '^TestRedeliveryStorm$$' -v .
	printf '\n' >>$(BROKERS_REPORT)
