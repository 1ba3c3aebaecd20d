package reliability

// The cloud document stores, DynamoDB (on dynalite) and Firestore (on the
// Google Cloud CLI's emulator), through the same harness, ledger and
// scenarios as the other stores. They are kept in this file, and run by
// a test of their own, so the shared tables change by a line or two.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"cloud.google.com/go/firestore"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/dynamostore"
	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/test/internal/emulator"
)

const (
	dynamoHowTo    = "scripts/dynalite.sh (make services), or set IDEM_DYNAMO_ENDPOINT"
	firestoreHowTo = "scripts/firestore.sh (make services), or set IDEM_FIRESTORE_EMULATOR_HOST"
	// firestoreProject is the emulator project the workers use.
	firestoreProject = "idemgen-reliability"
)

// docStoreName is the DynamoDB table or Firestore collection of this run,
// made from the run's Redis prefix (which carries the run id) so workers
// need no extra configuration.
func docStoreName(cfg workerConfig) string {
	return "idemrel_" + strings.NewReplacer(":", "", "/", "").Replace(strings.TrimPrefix(cfg.RedisPrefix, "idemrel:"))
}

// docStoreAddr is where the workers reach store when no proxy is in
// front: dynalite's endpoint, the emulator's host:port.
func docStoreAddr(store string) string {
	if store == "dynamo" {
		return emulator.DynamoEndpoint()
	}
	return testenv.FirestoreEmulatorHost()
}

// docUpstream is the host:port a FaultProxy forwards to.
func docUpstream(store string) string {
	if store == "dynamo" {
		return strings.TrimPrefix(strings.TrimPrefix(emulator.DynamoEndpoint(), "http://"), "https://")
	}
	return testenv.FirestoreEmulatorHost()
}

// dynamoClient is a worker's DynamoDB client; a fault-tolerant one gives
// up on a request after a second and retries it once.
func dynamoClient(endpoint string, faultTolerant bool) *dynamodb.Client {
	if faultTolerant {
		return emulator.Dynamo(endpoint, time.Second, 2)
	}
	return emulator.Dynamo(endpoint, 0, 3)
}

// firestoreClient is a client of the harness's project on the emulator
// at addr.
func firestoreClient(ctx context.Context, addr string) (*firestore.Client, error) {
	return emulator.Firestore(ctx, addr, firestoreProject)
}

// openDocStore is openStore for "dynamo" and "firestore". A skewed worker
// (ClockOffset) gives its clock to the DynamoDB store, which judges
// leases by the callers' clocks; the Firestore store judges them by
// Firestore's and takes the clock for its ttl field only.
func openDocStore(ctx context.Context, cfg workerConfig) (idemstore.Store, func(), error) {
	var clock []func() time.Time
	if cfg.ClockOffset != 0 {
		clock = append(clock, skewedClock(cfg.ClockOffset, cfg.ClockJump))
	}
	switch cfg.Store {
	case "dynamo":
		opts := []dynamostore.Option{}
		for _, c := range clock {
			opts = append(opts, dynamostore.WithClock(c))
		}
		if cfg.FaultTolerant {
			opts = append(opts, dynamostore.WithPollInterval(20*time.Millisecond, 200*time.Millisecond))
		}
		st, err := dynamostore.New(ctx, dynamoClient(cfg.StoreAddr, cfg.FaultTolerant), docStoreName(cfg), opts...)
		if err != nil {
			return nil, nil, err
		}
		return st, func() {}, nil
	case "firestore":
		client, err := firestoreClient(ctx, cfg.StoreAddr)
		if err != nil {
			return nil, nil, err
		}
		opts := []firestorestore.Option{firestorestore.WithPollInterval(20*time.Millisecond, 250*time.Millisecond)}
		for _, c := range clock {
			opts = append(opts, firestorestore.WithClock(c))
		}
		nctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		st, err := firestorestore.New(nctx, client, docStoreName(cfg), opts...)
		if err != nil {
			client.Close()
			return nil, nil, err
		}
		return st, func() { client.Close() }, nil
	}
	return nil, nil, fmt.Errorf("unknown store %q", cfg.Store)
}

// takeoverMargin is how long past a lease a store lets a crashed owner's
// key be taken over: DynamoDB's skew margin (leases on caller clocks);
// the other stores judge leases by one clock and take over at once.
func takeoverMargin(store string) time.Duration {
	if store == "dynamo" {
		return dynamostore.DefaultSkewMargin
	}
	return 0
}

// needDocStore skips (fails under CI=true) when the store's server does not
// answer, and prepares what the run needs there (the DynamoDB table).
func (h *harness) needDocStore(t *testing.T, store string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := h.base(store, "", "")
	switch store {
	case "dynamo":
		client := dynamoClient(emulator.DynamoEndpoint(), false)
		if _, err := client.ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
			missing(t, "a DynamoDB-compatible server at "+emulator.DynamoEndpoint(), err, dynamoHowTo)
		}
		table := docStoreName(cfg)
		// dynalite has no time to live (the records' expiry is judged in
		// code; TTL only deletes dead items).
		if err := dynamostore.CreateTable(ctx, client, table); err != nil && !errors.Is(err, dynamostore.ErrTTLNotEnabled) {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_, _ = client.DeleteTable(context.Background(), &dynamodb.DeleteTableInput{TableName: aws.String(table)})
		})
	case "firestore":
		client, err := firestoreClient(ctx, testenv.FirestoreEmulatorHost())
		if err == nil {
			_, err = client.Collection("probe").Doc("probe").Get(ctx)
			if status.Code(err) == codes.NotFound {
				err = nil
			}
			defer client.Close()
		}
		if err != nil {
			missing(t, "the Firestore emulator at "+testenv.FirestoreEmulatorHost(), err, firestoreHowTo)
		}
	}
}

// TestReliabilityDocumentStores runs the scenarios against DynamoDB and
// Firestore: duplicate storm, SIGKILL crashes, zombie past the lease,
// network faults through the FaultProxy, and clock skew (DynamoDB: its
// leases are judged by caller clocks, skewed within its stated margin;
// Firestore: by Firestore's clock, Guard and store clocks skewed by
// minutes).
func TestReliabilityDocumentStores(t *testing.T) {
	runStores(t, []string{"dynamo", "firestore"}, (*harness).needDocStore, func(h *harness, t *testing.T, store string, sz sizes) {
		t.Run("network", func(t *testing.T) { record(t, h.network(t, store, sz)) })
		if store == "dynamo" {
			t.Run("skew", func(t *testing.T) { record(t, h.callerClockSkew(t, store, sz, false)) })
		} else {
			t.Run("skew", func(t *testing.T) { record(t, h.skew(t, store, sz, false)) })
		}
	})
}

// callerClockSkew is the skew scenario for a store that judges leases by
// the callers' clocks (DynamoDB): every worker's Guard and store read a
// clock offset within ±40% of the store's skew margin, so any two callers
// differ by less than the margin, which is what the store promises to
// tolerate; no live owner may be taken over.
func (h *harness) callerClockSkew(t *testing.T, store string, sz sizes, beyond bool) row {
	start := time.Now()
	margin := dynamostore.DefaultSkewMargin
	offs := []skew{{-margin * 2 / 5, false}, {0, false}, {margin * 2 / 5, false}, {margin * 2 / 5, true}}
	scenario := "skew"
	if beyond {
		// The negative control: clocks 3 margins apart, more than the
		// 2s lease less its heartbeat interval.
		offs = []skew{{-3 * margin / 2, false}, {3 * margin / 2, false}}
		scenario = "skew-beyond"
	}
	r := h.skewStorm(t, store, scenario, sz, offs, false, beyond)
	name := fmt.Sprintf("clock skew within the %s skew margin (Guard and store clocks %s)", margin, r.clocks)
	if beyond {
		name = fmt.Sprintf("clock skew **beyond** the %s skew margin (clocks %s; self-test: violations expected)", margin, r.clocks)
	}
	return r.row(store, name, beyond, "leases judged by caller clocks; ", start)
}

// TestHarnessDetectsSkewBeyondMargin is the DynamoDB skew row's negative
// control: callers whose clocks differ by three times the store's skew
// margin must show live owners taken over, or the row proves nothing.
func TestHarnessDetectsSkewBeyondMargin(t *testing.T) {
	h := newHarness(t)
	h.needDocStore(t, "dynamo")
	r := h.callerClockSkew(t, "dynamo", levelSizes(false), true)
	detected(t, r, "clocks skewed beyond the margin broke nothing: the skew row cannot fail")
}

// TestHarnessDetectsBrokenDocumentStore is TestHarnessDetectsBrokenStore
// on the document stores: a BrokenStore over each (lost leases ignored,
// stale completions forced through) must make the zombie scenario report
// violations, so their zero-violation rows mean something.
func TestHarnessDetectsBrokenDocumentStore(t *testing.T) {
	h := newHarness(t)
	sz := levelSizes(false)
	for _, store := range []string{"dynamo", "firestore"} {
		t.Run(store+"/leaselost", func(t *testing.T) {
			h.needDocStore(t, store)
			t.Parallel()
			r := h.zombie(t, store, sz, "leaselost")
			r.expectViolations = true
			detected(t, r, "the zombie scenario found no violation with a store that ignores lost leases: the harness cannot fail")
		})
	}
}
