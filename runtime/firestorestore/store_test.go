package firestorestore_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/firestorestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
)

// TestRoundTrips counts the calls a Guard's calls make: a replay is one
// read with the default claim order; a first execution is the read, the
// create and the completion (WithCreateFirst: create and completion, and a
// replay, its key seen by this store before, is the read alone: no commit,
// so nothing written); heartbeats are one commit each, with no read.
func TestRoundTrips(t *testing.T) {
	addr := testenv.FirestoreEmulatorHost()
	emulator(t)
	for _, mode := range []struct {
		name            string
		opts            []firestorestore.Option
		first, replay   map[string]int
		firstN, replayN int
	}{
		{"ReadFirst", nil,
			map[string]int{"BatchGetDocuments": 1, "Commit": 2}, map[string]int{"BatchGetDocuments": 1}, 3, 1},
		{"CreateFirst", []firestorestore.Option{firestorestore.WithCreateFirst()},
			map[string]int{"Commit": 2}, map[string]int{"BatchGetDocuments": 1}, 2, 1},
	} {
		t.Run(mode.name, func(t *testing.T) {
			cnt := &rpcCounter{}
			s := newStore(t, emulatorClient(t, addr, cnt), mode.opts...)
			g := idem.NewGuard(s)
			call := idemtest.SleepCall(g)
			fast := &idem.Spec{Name: "firestorestore.fast", Lease: 30 * time.Second}
			slow := &idem.Spec{Name: "firestorestore.slow", Lease: 600 * time.Millisecond}
			tests := []struct {
				name  string
				spec  *idem.Spec
				id    string
				sleep time.Duration
				want  map[string]int // nil: heartbeats, see below
			}{
				{"first execution", fast, "a", 0, mode.first},
				{"replay", fast, "a", 0, mode.replay},
				{"replay again", fast, "a", 0, mode.replay},
				{"slow first execution", slow, "b", 900 * time.Millisecond, nil},
			}
			for _, tt := range tests {
				cnt.reset()
				got, err := call(tt.spec, tt.id, tt.sleep)
				if err != nil || got != "r-"+tt.id {
					t.Fatalf("%s: call = %q, %v", tt.name, got, err)
				}
				calls := cnt.reset()
				if tt.want == nil {
					// Heartbeats every lease/3 = 200ms during 900ms: each
					// one commit; the rest is a first execution's calls.
					hb := calls["Commit"] - mode.first["Commit"]
					if hb < 2 || calls["BatchGetDocuments"] != mode.first["BatchGetDocuments"] {
						t.Errorf("%s: calls %v; want %v plus at least two heartbeat commits and no reads", tt.name, calls, mode.first)
					}
					continue
				}
				if diff := cmp.Diff(tt.want, calls); diff != "" {
					t.Errorf("%s: calls (-want +got):\n%s", tt.name, diff)
				}
				n := 0
				for _, v := range calls {
					n += v
				}
				if want := map[bool]int{true: mode.firstN, false: mode.replayN}[tt.name == "first execution"]; n != want {
					t.Errorf("%s: %d round trips, want %d", tt.name, n, want)
				}
			}
		})
	}
}

// TestForeignDocuments: documents that are not records (another writer's,
// a damaged one, a future version) are idem.ErrCorruptRecord to Claim,
// Get and Wait, fenced writes on them are idem.ErrLeaseLost, and none of
// it changes the document.
func TestForeignDocuments(t *testing.T) {
	c := emulator(t)
	s := newStore(t, c)
	ctx := context.Background()
	// A valid record to damage field by field.
	if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "valid", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	snap, err := s.Collection().Doc("kvalid").Get(ctx)
	if err != nil {
		t.Fatal(err)
	}
	valid := snap.Data()
	with := func(field string, v any) map[string]any {
		m := map[string]any{}
		for k, x := range valid {
			m[k] = x
		}
		if v == nil {
			delete(m, field)
		} else {
			m[field] = v
		}
		return m
	}
	tests := []struct {
		name string
		data map[string]any
		want string // in the error
	}{
		{"foreign lock", map[string]any{"owner": "host-7", "locked": true}, "no v field"},
		{"empty", map[string]any{}, "no v field"},
		{"future version", with("v", int64(2)), "record version 2"},
		{"version as string", with("v", "1"), "v is string"},
		{"unknown state", with("st", int64(9)), "unknown state 9"},
		{"short owner", with("ow", []byte{1, 2}), "ow has 2 bytes"},
		{"no fingerprint", with("fp", nil), "no fp field"},
		{"zero fence", with("fe", int64(0)), "fence 0"},
		{"negative lease", with("ld", int64(-1)), "negative lease"},
		{"result as string", with("res", "x"), "res is string"},
		{"claim time as integer", with("ca", int64(5)), "ca is int64"},
		{"steps as string", with("sp", "x"), "sp is string"},
		{"step as integer", with("sp", map[string]any{"charge": int64(1)}), `step "charge" is int64`},
		{"step key escaped needlessly", with("sp", map[string]any{"~charge": []byte("x")}), "is not a step's map key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := strings.ReplaceAll(tt.name, " ", "-")
			ref := s.Collection().Doc("k" + key)
			if _, err := ref.Set(ctx, tt.data); err != nil {
				t.Fatal(err)
			}
			before, err := ref.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{2}, Lease: time.Minute, TTL: time.Hour})
			if !errors.Is(err, idem.ErrCorruptRecord) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Claim = %v; want idem.ErrCorruptRecord saying %q", err, tt.want)
			}
			if _, err := s.Get(ctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Get = %v; want idem.ErrCorruptRecord", err)
			}
			wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			if err := s.Wait(wctx, key); !errors.Is(err, idem.ErrCorruptRecord) {
				t.Errorf("Wait = %v; want idem.ErrCorruptRecord", err)
			}
			l := idemstore.Lease{Key: key, Owner: idemstore.Token{2}, Fence: 1, Duration: time.Minute, TTL: time.Hour}
			if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("x")}); !errors.Is(err, idem.ErrLeaseLost) {
				t.Errorf("Complete = %v; want idem.ErrLeaseLost", err)
			}
			after, err := ref.Get(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !after.UpdateTime.Equal(before.UpdateTime) {
				t.Errorf("the document was written: update time %v -> %v", before.UpdateTime, after.UpdateTime)
			}
		})
	}
}

// twoProcesses is two stores on one collection, as two processes have:
// neither remembers what the other claimed.
func twoProcesses(t *testing.T) (a, b *firestorestore.Store) {
	t.Helper()
	c := emulator(t)
	a = newStore(t, c)
	b, err := firestorestore.New(context.Background(), c, a.Collection().ID)
	if err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestStaleOwnerOtherProcess: a fenced write from a store that did not
// make the claim (another process: nothing remembered) reads the document
// and is rejected once the lease was taken over, and accepted while it
// holds.
func TestStaleOwnerOtherProcess(t *testing.T) {
	a, b := twoProcesses(t)
	ctx := context.Background()
	req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: 300 * time.Millisecond, TTL: time.Hour}
	res, err := a.Claim(ctx, req)
	if err != nil || res.Status != idemstore.ClaimAcquired {
		t.Fatalf("claim = %+v, %v", res, err)
	}
	l := idemstore.Lease{Key: "k", Owner: req.Owner, Fence: res.Fence, Duration: req.Lease, TTL: time.Hour}
	if err := b.Heartbeat(ctx, l); err != nil {
		t.Fatalf("heartbeat through another store instance = %v", err)
	}
	time.Sleep(400 * time.Millisecond)
	req2 := req
	req2.Owner = idemstore.Token{2}
	if res, err := b.Claim(ctx, req2); err != nil || res.Status != idemstore.ClaimTakenOver || res.Fence != 2 {
		t.Fatalf("takeover = %+v, %v", res, err)
	}
	for name, s := range map[string]*firestorestore.Store{"claiming store": a, "other store": b} {
		if err := s.Complete(ctx, l, idemstore.Result{Data: []byte("late")}); !errors.Is(err, idem.ErrLeaseLost) {
			t.Errorf("stale Complete through the %s = %v; want idem.ErrLeaseLost", name, err)
		}
	}
}

// TestCleanup: Cleanup deletes the records past their retention and
// leaves live records and foreign documents alone (the emulator has no
// TTL sweeper).
func TestCleanup(t *testing.T) {
	c := emulator(t)
	s := newStore(t, c)
	ctx := context.Background()
	finish := func(key string, ttl time.Duration) {
		t.Helper()
		res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{1}, Lease: time.Minute, TTL: ttl})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Complete(ctx, idemstore.Lease{Key: key, Owner: idemstore.Token{1}, Fence: res.Fence, TTL: ttl}, idemstore.Result{Data: []byte("v")}); err != nil {
			t.Fatal(err)
		}
	}
	finish("dead1", 100*time.Millisecond)
	finish("dead2", 100*time.Millisecond)
	finish("live", time.Hour)
	if _, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "running", Owner: idemstore.Token{2}, Lease: time.Minute, TTL: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Collection().Doc("foreign").Set(ctx, map[string]any{"ttl": time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	n, err := s.Cleanup(ctx)
	if err != nil || n != 2 {
		t.Fatalf("Cleanup = %d, %v; want 2", n, err)
	}
	docs, err := s.Collection().Documents(ctx).GetAll()
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, d := range docs {
		ids = append(ids, d.Ref.ID)
	}
	if diff := cmp.Diff([]string{"foreign", "klive", "krunning"}, ids); diff != "" {
		t.Errorf("documents left (-want +got):\n%s", diff)
	}
}

// wakesOnCompletion claims "w", waits on it, checks the waiter still
// waits after settle, completes the record and returns how long the
// waiter then took to wake, failing past within (why says what that means).
func wakesOnCompletion(t *testing.T, s *firestorestore.Store, settle, within time.Duration, why string) time.Duration {
	t.Helper()
	ctx := context.Background()
	res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "w", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	woke := make(chan error, 1)
	go func() { woke <- s.Wait(ctx, "w") }()
	time.Sleep(settle) // the waiter listens or polls by now
	select {
	case err := <-woke:
		t.Fatalf("Wait returned before the completion: %v", err)
	default:
	}
	done := time.Now()
	if err := s.Complete(ctx, idemstore.Lease{Key: "w", Owner: idemstore.Token{1}, Fence: res.Fence, TTL: time.Hour}, idemstore.Result{}); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-woke:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(within):
		t.Fatalf("Wait did not wake within %v of the completion (%s)", within, why)
	}
	return time.Since(done)
}

// TestWaitWakesByListener: with polling slowed to 30s, only the snapshot
// listener can wake a waiter within seconds of the completion.
func TestWaitWakesByListener(t *testing.T) {
	c := emulator(t)
	s := newStore(t, c, firestorestore.WithPollInterval(30*time.Second, 30*time.Second))
	took := wakesOnCompletion(t, s, 500*time.Millisecond, 10*time.Second, "polling is 30s: the listener did not wake it")
	t.Logf("woke %v after the completion", took)
}

// TestNewUnavailable: New against a refused port fails within its ctx
// with idem.ErrStoreUnavailable.
func TestNewUnavailable(t *testing.T) {
	c := emulatorClient(t, testenv.RefusedAddr(t), nil)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	s, err := firestorestore.New(ctx, c, "idem")
	if s != nil || !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("New = %v, %v; want idem.ErrStoreUnavailable", s, err)
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("New took %v, past its 2s ctx", took)
	}
}

// TestClaimRetriedAfterLostReply: a claim whose write was applied but
// whose reply was lost is re-sent by the client (it retries commits on
// Unavailable) and then finds the document already holding its own
// owner token. That is the caller's claim: it owns the key at the fence
// written, instead of being told another owner holds it (which left the
// key stuck for a lease). Simulated by claiming twice with one token.
func TestClaimRetriedAfterLostReply(t *testing.T) {
	c := emulator(t)
	for _, mode := range []struct {
		name string
		opts []firestorestore.Option
	}{{"ReadFirst", nil}, {"CreateFirst", []firestorestore.Option{firestorestore.WithCreateFirst()}}} {
		t.Run(mode.name, func(t *testing.T) {
			s := newStore(t, c, mode.opts...)
			ctx := context.Background()
			req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{7}, Fingerprint: idemstore.Fingerprint{1}, Lease: time.Minute, TTL: time.Hour}
			first, err := s.Claim(ctx, req)
			if err != nil || first.Status != idemstore.ClaimAcquired {
				t.Fatalf("first claim = %+v, %v", first, err)
			}
			again, err := s.Claim(ctx, req)
			if err != nil || again.Status != idemstore.ClaimAcquired || again.Fence != first.Fence {
				t.Fatalf("re-sent claim = %+v, %v; want acquired at fence %d", again, err, first.Fence)
			}
			other := req
			other.Owner = idemstore.Token{8}
			if res, err := s.Claim(ctx, other); err != nil || res.Status != idemstore.ClaimInProgress {
				t.Fatalf("another owner's claim = %+v, %v; want in progress", res, err)
			}
			if err := s.Complete(ctx, idemstore.Lease{Key: "k", Owner: req.Owner, Fence: again.Fence, TTL: time.Hour}, idemstore.Result{Data: []byte("r")}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestWaitPollsWithoutListener: with every Listen stream refused (a
// network or proxy that breaks streaming), the waiter still wakes after
// the completion, by polling.
func TestWaitPollsWithoutListener(t *testing.T) {
	emulator(t)
	c := emulatorClient(t, testenv.FirestoreEmulatorHost(), nil, grpc.WithStreamInterceptor(refuseListen))
	s := newStore(t, c, firestorestore.WithPollInterval(20*time.Millisecond, 200*time.Millisecond))
	wakesOnCompletion(t, s, 300*time.Millisecond, 5*time.Second, "without its listener; polling caps at 200ms")
	if n := listensRefused.Load(); n == 0 {
		t.Fatal("no Listen stream was attempted: the test did not exercise the fallback")
	}
}

var listensRefused atomic.Int64

func refuseListen(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
	if strings.HasSuffix(method, "/Listen") {
		listensRefused.Add(1)
		return nil, status.Error(codes.PermissionDenied, "test: Listen refused")
	}
	return streamer(ctx, desc, cc, method, opts...)
}

// TestOperationTimeout: against a server that accepts connections and
// never answers, every method of a store on a context without deadline
// fails with idem.ErrStoreUnavailable at the operation timeout (the
// client alone retries until the context ends: the caller hung).
func TestOperationTimeout(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			defer conn.Close() // held open, never answered
		}
	}()
	c := emulatorClient(t, ln.Addr().String(), nil)
	start := time.Now()
	_, err = firestorestore.New(context.Background(), c, "idem", firestorestore.WithOperationTimeout(300*time.Millisecond))
	if !errors.Is(err, idem.ErrStoreUnavailable) || time.Since(start) > 3*time.Second {
		t.Fatalf("New = %v after %v; want idem.ErrStoreUnavailable at the 300ms timeout", err, time.Since(start))
	}
	s, err := firestorestore.NewUnchecked(c, "idem", firestorestore.WithOperationTimeout(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	l := idemstore.Lease{Key: "k", Owner: idemstore.Token{1}, Fence: 1, Duration: time.Minute, TTL: time.Hour}
	ops := map[string]func() error{
		"Claim": func() error {
			_, err := s.Claim(ctx, idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{1}, Lease: time.Minute, TTL: time.Hour})
			return err
		},
		"Heartbeat": func() error { return s.Heartbeat(ctx, l) },
		"Complete":  func() error { return s.Complete(ctx, l, idemstore.Result{Data: []byte("x")}) },
		"Get":       func() error { _, err := s.Get(ctx, "k"); return err },
		"Delete":    func() error { return s.Delete(ctx, "k") },
		"Wait":      func() error { return s.Wait(ctx, "k") },
	}
	for name, op := range ops {
		start := time.Now()
		err := op()
		if took := time.Since(start); took > 3*time.Second {
			t.Errorf("%s took %v with a 300ms operation timeout", name, took)
		}
		if !errors.Is(err, idem.ErrStoreUnavailable) || !strings.Contains(err.Error(), "no answer within 300ms") {
			t.Errorf("%s = %v; want idem.ErrStoreUnavailable (no answer within the timeout)", name, err)
		}
	}
}

// cancelCommits answers the next n Commit calls with the emulator's
// "call already cancelled" (codes.Canceled), after sending them on
// (applied: the answer was lost) or instead of sending them.
type cancelCommits struct {
	n       atomic.Int64
	applied bool
	hits    atomic.Int64
}

func (c *cancelCommits) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if !strings.HasSuffix(method, "/Commit") || c.n.Add(-1) < 0 {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	c.hits.Add(1)
	if c.applied {
		if err := invoker(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
	}
	return status.Error(codes.Canceled, "call already cancelled (test)")
}

// TestServerCancelledWrites: the emulator under load answers a Commit
// with Canceled while the caller still waits (CI saw a Complete fail so,
// and the storm counted a result that ran but was not recorded). Every
// write is re-sent within the call: Claim and Complete succeed whether
// the cancelled write was applied or not, and the record holds the one
// result at the claimed fence.
func TestServerCancelledWrites(t *testing.T) {
	emulator(t)
	for _, tc := range []struct {
		name    string
		applied bool
		n       int64
		opts    []firestorestore.Option
	}{
		{"NotApplied/ReadFirst", false, 1, nil},
		{"Applied/ReadFirst", true, 1, nil},
		{"NotApplied/CreateFirst", false, 1, []firestorestore.Option{firestorestore.WithCreateFirst()}},
		{"Applied/CreateFirst", true, 1, []firestorestore.Option{firestorestore.WithCreateFirst()}},
		{"AppliedTwice", true, 2, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cc := &cancelCommits{applied: tc.applied}
			c := emulatorClient(t, testenv.FirestoreEmulatorHost(), nil, grpc.WithUnaryInterceptor(cc.unary))
			s := newStore(t, c, tc.opts...)
			ctx := context.Background()
			req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{3}, Fingerprint: idemstore.Fingerprint{1}, Lease: time.Minute, TTL: time.Hour}

			cc.n.Store(tc.n)
			res, err := s.Claim(ctx, req)
			if err != nil || res.Status != idemstore.ClaimAcquired || res.Fence != 1 {
				t.Fatalf("Claim = %+v, %v; want acquired at fence 1", res, err)
			}
			cc.n.Store(tc.n)
			lease := idemstore.Lease{Key: "k", Owner: req.Owner, Fence: res.Fence, Duration: time.Minute, TTL: time.Hour}
			if err := s.Complete(ctx, lease, idemstore.Result{Data: []byte("once")}); err != nil {
				t.Fatalf("Complete = %v", err)
			}
			if got := cc.hits.Load(); got != 2*tc.n {
				t.Fatalf("%d commits cancelled; want %d (the test did not exercise the retry)", got, 2*tc.n)
			}
			rec, err := s.Get(ctx, "k")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]any{idemstore.StateCompleted, uint64(1), "once"}, []any{rec.State, rec.Fence, string(rec.Result)}); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			other := req
			other.Owner = idemstore.Token{4}
			if res, err := s.Claim(ctx, other); err != nil || res.Status != idemstore.ClaimCompleted || string(res.Result.Data) != "once" {
				t.Fatalf("a duplicate's claim = %+v, %v; want the completed result", res, err)
			}
		})
	}
}

// TestServerCancelledDelete: Delete re-sends a Commit the emulator
// cancelled (CI saw the conformance suite's Delete fail so), and succeeds
// whether the cancelled one was applied or not; a key that was never
// there is still ErrNotFound.
func TestServerCancelledDelete(t *testing.T) {
	eachCancelledCommit(t, func(t *testing.T, s *firestorestore.Store, cc *cancelCommits) {
		ctx := context.Background()
		req := idemstore.ClaimRequest{Key: "k", Owner: idemstore.Token{3}, Fingerprint: idemstore.Fingerprint{1}, Lease: time.Minute, TTL: time.Hour}
		if res, err := s.Claim(ctx, req); err != nil || res.Status != idemstore.ClaimAcquired {
			t.Fatalf("Claim = %+v, %v; want acquired", res, err)
		}
		cc.n.Store(1)
		if err := s.Delete(ctx, "k"); err != nil {
			t.Fatalf("Delete = %v, want nil", err)
		}
		if got := cc.hits.Load(); got != 1 {
			t.Fatalf("%d commits cancelled; want 1 (the test did not exercise the retry)", got)
		}
		if _, err := s.Get(ctx, "k"); !errors.Is(err, idem.ErrNotFound) {
			t.Fatalf("Get after Delete = %v, want ErrNotFound", err)
		}
		if err := s.Delete(ctx, "never"); !errors.Is(err, idem.ErrNotFound) {
			t.Fatalf("Delete of an absent key = %v, want ErrNotFound", err)
		}
	})
}

// TestServerCancelledAdmin: ForceRelease and Cleanup send a write the
// server cancelled again, as claims and deletes do, whether the
// cancelled write was applied or not: ForceRelease leaves the record
// released under a higher fence, Cleanup deletes and counts the expired
// record.
func TestServerCancelledAdmin(t *testing.T) {
	eachCancelledCommit(t, func(t *testing.T, s *firestorestore.Store, cc *cancelCommits) {
		ctx := context.Background()
		claim := func(key string, ttl time.Duration) idemstore.ClaimResult {
			t.Helper()
			res, err := s.Claim(ctx, idemstore.ClaimRequest{Key: key, Owner: idemstore.Token{3}, Fingerprint: idemstore.Fingerprint{1}, Lease: time.Minute, TTL: ttl})
			if err != nil || res.Status != idemstore.ClaimAcquired {
				t.Fatalf("Claim(%s) = %+v, %v; want acquired", key, res, err)
			}
			return res
		}

		res := claim("held", time.Hour)
		cc.n.Store(1)
		rec, err := s.ForceRelease(ctx, "held")
		if err != nil {
			t.Fatalf("ForceRelease = %v, want nil", err)
		}
		if got := cc.hits.Load(); got != 1 {
			t.Fatalf("%d commits cancelled; want 1 (the test did not exercise the retry)", got)
		}
		got, err := s.Get(ctx, "held")
		if err != nil {
			t.Fatal(err)
		}
		if got.State != idemstore.StateReleased || got.Fence <= res.Fence || got.Fence != rec.Fence || got.Owner != (idemstore.Token{}) {
			t.Errorf("after ForceRelease: stored %+v, returned %+v; want released, no owner, the returned fence above %d", got, rec, res.Fence)
		}

		res = claim("dead", 100*time.Millisecond)
		if err := s.Complete(ctx, idemstore.Lease{Key: "dead", Owner: idemstore.Token{3}, Fence: res.Fence, TTL: 100 * time.Millisecond}, idemstore.Result{Data: []byte("v")}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		cc.hits.Store(0)
		cc.n.Store(1)
		n, err := s.Cleanup(ctx)
		if err != nil || n != 1 {
			t.Fatalf("Cleanup = %d, %v; want 1, nil", n, err)
		}
		if got := cc.hits.Load(); got != 1 {
			t.Fatalf("%d commits cancelled; want 1 (the test did not exercise the retry)", got)
		}
		if _, err := s.Get(ctx, "dead"); !errors.Is(err, idem.ErrNotFound) {
			t.Fatalf("Get after Cleanup = %v, want ErrNotFound", err)
		}
	})
}

// eachCancelledCommit runs f on a store whose next commit (once cc.n is
// set) the server answers with Canceled, once where that write was not
// applied and once where it was.
func eachCancelledCommit(t *testing.T, f func(t *testing.T, s *firestorestore.Store, cc *cancelCommits)) {
	emulator(t)
	for _, applied := range []bool{false, true} {
		t.Run(fmt.Sprintf("applied=%v", applied), func(t *testing.T) {
			cc := &cancelCommits{applied: applied}
			c := emulatorClient(t, testenv.FirestoreEmulatorHost(), nil, grpc.WithUnaryInterceptor(cc.unary))
			f(t, newStore(t, c), cc)
		})
	}
}
