package idem_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

type invoice struct {
	ID     string
	Amount int64
	Lines  []string
	Meta   map[string]string
	At     time.Time
}

// call runs one guarded call of spec keyed by key, the shape idemgen emits.
func call[R any](ctx context.Context, g *idem.Guard, spec *idem.Spec, key string, fn func(context.Context) (R, error)) (R, error) {
	c := g.Begin(spec, key)
	return idem.Do(ctx, c, fn)
}

func TestDuplicateModes(t *testing.T) {
	first := func(ctx context.Context) (invoice, error) {
		return invoice{ID: "inv_1", Amount: 1250, Lines: []string{"a"}, Meta: map[string]string{"k": "v"}, At: time.Unix(1700000000, 0).UTC()}, nil
	}
	tests := []struct {
		mode      idem.OnDuplicate
		wantErr   error
		wantRuns  int64
		wantEvent []string
	}{
		{idem.DuplicateReturn, nil, 1, []string{"executed", "replayed"}},
		{idem.DuplicateWait, nil, 1, []string{"executed", "replayed"}},
		{idem.DuplicateRaise, idem.ErrDuplicate, 1, []string{"executed", "duplicate"}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.mode), func(t *testing.T) {
			rec := &idemtest.Recorder{}
			g := idem.NewGuard(memstore.New(), idem.WithObserver(rec))
			spec := &idem.Spec{Name: "test.Invoice", OnDuplicate: tt.mode}
			var runs atomic.Int64
			fn := func(ctx context.Context) (invoice, error) { runs.Add(1); return first(ctx) }
			v1, err := call(context.Background(), g, spec, "k", fn)
			if err != nil {
				t.Fatal(err)
			}
			v2, err := call(context.Background(), g, spec, "k", fn)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("duplicate err = %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil {
				if diff := cmp.Diff(v1, v2); diff != "" {
					t.Fatalf("replay differs (-first +replay):\n%s", diff)
				}
			}
			if runs.Load() != tt.wantRuns {
				t.Fatalf("ran %d times, want %d", runs.Load(), tt.wantRuns)
			}
			if diff := cmp.Diff(tt.wantEvent, rec.Outcomes()); diff != "" {
				t.Fatalf("outcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// Replays through a store that keeps no Go values decode the stored bytes
// and must equal the original too.
type bytesOnly struct{ idemstore.Store }

func (s bytesOnly) Claim(ctx context.Context, r idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, r)
	res.Result.Value = nil
	return res, err
}

func TestReplayDecodesEqual(t *testing.T) {
	g := idem.NewGuard(bytesOnly{memstore.New()})
	spec := &idem.Spec{Name: "test.Decode"}
	orig := &invoice{ID: "inv_2", Amount: -3, Lines: []string{}, Meta: map[string]string{"a": "b"}, At: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	fn := func(ctx context.Context) (*invoice, error) { return orig, nil }
	if _, err := call(context.Background(), g, spec, "k", fn); err != nil {
		t.Fatal(err)
	}
	got, err := call(context.Background(), g, spec, "k", fn)
	if err != nil {
		t.Fatal(err)
	}
	if got == orig {
		t.Fatal("replay returned the original pointer, want a decoded copy")
	}
	if diff := cmp.Diff(orig, got); diff != "" {
		t.Fatalf("decoded replay differs:\n%s", diff)
	}
}

func TestConcurrentDuplicates(t *testing.T) {
	tests := []struct {
		name    string
		mode    idem.OnDuplicate
		guards  int // >1: duplicates come from other "processes" through the store
		wantErr error
	}{
		{"wait shares the result in process", idem.DuplicateWait, 1, nil},
		{"wait across guards", idem.DuplicateWait, 3, nil},
		{"return gets in progress", idem.DuplicateReturn, 1, idem.ErrInProgress},
		{"raise gets in progress", idem.DuplicateRaise, 1, idem.ErrInProgress},
		{"return across guards", idem.DuplicateReturn, 3, idem.ErrInProgress},
	}
	// The memory store is in process: a Guard over it keeps no flights
	// and asks the store. Over a store that is not (the same store behind
	// a wrapper), same-key callers in the process are answered by the
	// Guard's flights.
	stores := []struct {
		name string
		new  func() idemstore.Store
	}{
		{"memory", func() idemstore.Store { return memstore.New(memstore.WithPollInterval(5 * time.Millisecond)) }},
		{"networked", func() idemstore.Store {
			return networked{memstore.New(memstore.WithPollInterval(5 * time.Millisecond))}
		}},
	}
	for _, sk := range stores {
		for _, tt := range tests {
			t.Run(sk.name+"/"+tt.name, func(t *testing.T) {
				store := sk.new()
				var guards []*idem.Guard
				for i := 0; i < tt.guards; i++ {
					guards = append(guards, idem.NewGuard(store))
				}
				spec := &idem.Spec{Name: "test.Storm", OnDuplicate: tt.mode, Wait: 5 * time.Second}
				var runs atomic.Int64
				release := make(chan struct{})
				started := make(chan struct{})
				fn := func(ctx context.Context) (string, error) {
					if runs.Add(1) == 1 {
						close(started)
					}
					<-release
					return "done", nil
				}
				leader := make(chan error, 1)
				go func() { _, err := call(context.Background(), guards[0], spec, "k", fn); leader <- err }()
				<-started
				const n = 100
				var wg sync.WaitGroup
				errs := make(chan error, n)
				for i := 0; i < n; i++ {
					wg.Add(1)
					go func(i int) {
						defer wg.Done()
						v, err := call(context.Background(), guards[i%len(guards)], spec, "k", fn)
						if err == nil && v != "done" {
							err = fmt.Errorf("got %q", v)
						}
						errs <- err
					}(i)
				}
				if tt.wantErr != nil {
					wg.Wait() // duplicates return at once while the leader runs
				}
				close(release)
				wg.Wait()
				close(errs)
				if err := <-leader; err != nil {
					t.Fatalf("leader: %v", err)
				}
				for err := range errs {
					if !errors.Is(err, tt.wantErr) {
						t.Fatalf("duplicate: err = %v, want %v", err, tt.wantErr)
					}
				}
				if runs.Load() != 1 {
					t.Fatalf("ran %d times, want 1", runs.Load())
				}
			})
		}
	}
}

// networked is a store the Guard does not take for an in-process one
// (idem.InProcess is not among an idemstore.Store's methods).
type networked struct{ idemstore.Store }

func TestWaitBounded(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "test.Slow", OnDuplicate: idem.DuplicateWait, Wait: 50 * time.Millisecond}
	release := make(chan struct{})
	started := make(chan struct{})
	go call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) {
		close(started)
		<-release
		return 1, nil
	})
	defer close(release)
	<-started
	t.Run("by the wait option", func(t *testing.T) {
		begin := time.Now()
		_, err := call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) { return 2, nil })
		if !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("err = %v, want ErrInProgress after the wait bound", err)
		}
		if d := time.Since(begin); d < 40*time.Millisecond || d > 2*time.Second {
			t.Fatalf("waited %v, want about 50ms", d)
		}
	})
	t.Run("by ctx", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		time.AfterFunc(10*time.Millisecond, cancel)
		_, err := call(ctx, g, &idem.Spec{Name: "test.Slow", OnDuplicate: idem.DuplicateWait, Wait: time.Hour}, "k",
			func(ctx context.Context) (int, error) { return 2, nil })
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
	})
}

func TestOnFailure(t *testing.T) {
	boom := errors.New("card declined")
	tests := []struct {
		name      string
		spec      idem.Spec
		wantRuns  int64
		wantMatch func(error) bool
	}{
		{"unlock runs again", idem.Spec{OnFailure: idem.FailureUnlock}, 2, func(err error) bool { return errors.Is(err, boom) }},
		{"lock replays the recorded error", idem.Spec{OnFailure: idem.FailureLock}, 1, func(err error) bool {
			var rec *idem.RecordedError
			return errors.As(err, &rec) && rec.Message == "card declined" && strings.Contains(err.Error(), "test.Charge")
		}},
		{"lock with raise is a duplicate", idem.Spec{OnFailure: idem.FailureLock, OnDuplicate: idem.DuplicateRaise}, 1, func(err error) bool {
			var rec *idem.RecordedError
			return errors.Is(err, idem.ErrDuplicate) && errors.As(err, &rec)
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, store := range []idemstore.Store{memstore.New(), bytesOnly{memstore.New()}} {
				g := idem.NewGuard(store)
				spec := tt.spec
				spec.Name = "test.Charge"
				var runs atomic.Int64
				fn := func(ctx context.Context) (int, error) { runs.Add(1); return 0, boom }
				if _, err := call(context.Background(), g, &spec, "k", fn); !errors.Is(err, boom) {
					t.Fatalf("first call err = %v, want the function's own error", err)
				}
				_, err := call(context.Background(), g, &spec, "k", fn)
				if !tt.wantMatch(err) {
					t.Fatalf("second call err = %v", err)
				}
				if runs.Load() != tt.wantRuns {
					t.Fatalf("ran %d times, want %d", runs.Load(), tt.wantRuns)
				}
			}
		})
	}
}

func TestPanicReleasesAndRepanics(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "test.Panics"}
	func() {
		defer func() {
			if p := recover(); p != "kaboom" {
				t.Fatalf("recovered %v, want the function's panic", p)
			}
		}()
		call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) { panic("kaboom") })
	}()
	v, err := call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Fatalf("after a panic the key must be free: got %v, %v", v, err)
	}
}

func TestFenceFromAndLeaseLost(t *testing.T) {
	clock := idemtest.NewClock(time.Now())
	store := memstore.New(memstore.WithClock(clock.Now))
	rec := &idemtest.Recorder{}
	g := idem.NewGuard(store, idem.WithObserver(rec))
	spec := &idem.Spec{Name: "test.Zombie", Lease: 30 * time.Millisecond}
	var key string
	running := make(chan struct{})
	var cause error
	_, err := call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) {
		fence, ok := idem.FenceFrom(ctx)
		if !ok || fence != 1 {
			t.Errorf("FenceFrom = %d, %v; want 1, true", fence, ok)
		}
		l, _, _ := idem.LeaseFrom(ctx)
		key = l.Key
		close(running)
		// Another process takes over once the lease has expired by the
		// store's clock: the next heartbeat must notice.
		// It retries the same call (same fingerprint): another payload
		// would be a mismatch, expired lease or not.
		clock.Advance(time.Second)
		r, _ := store.Get(context.Background(), key)
		res, err := store.Claim(context.Background(), idemstore.ClaimRequest{Key: key, Fingerprint: r.Fingerprint, Owner: idemstore.Token{1}, Lease: time.Hour, TTL: time.Hour})
		if err != nil || res.Status != idemstore.ClaimTakenOver {
			t.Errorf("takeover = %v, %v", res.Status, err)
		}
		select {
		case <-ctx.Done():
			cause = context.Cause(ctx)
		case <-time.After(5 * time.Second):
			t.Error("ctx not canceled after the lease was lost")
		}
		return 1, nil
	})
	<-running
	if !errors.Is(err, idem.ErrLeaseLost) || !errors.Is(cause, idem.ErrLeaseLost) {
		t.Fatalf("Do = %v, ctx cause = %v; want ErrLeaseLost for both", err, cause)
	}
	r, _ := store.Get(context.Background(), key)
	if r.State != idemstore.StateInProgress || r.Owner != (idemstore.Token{1}) || r.Fence != 2 {
		t.Fatalf("record = %v owner %v fence %d; the new owner's claim must stand", r.State, r.Owner, r.Fence)
	}
	if got := rec.Outcomes(); !slicesContain(got, "lease_lost") {
		t.Fatalf("outcomes %v lack lease_lost", got)
	}
}

func slicesContain(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestHeartbeatKeepsLongCallAlive(t *testing.T) {
	store := memstore.New()
	g := idem.NewGuard(store)
	// Leases long enough that a loaded 2-core CI machine's scheduling
	// delays (tens of ms under -race) do not look like missed heartbeats.
	spec := &idem.Spec{Name: "test.Long", Lease: 200 * time.Millisecond}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, err := call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) {
			select {
			case <-time.After(time.Second): // five leases
				return 1, nil
			case <-ctx.Done():
				return 0, context.Cause(ctx)
			}
		})
		if err != nil {
			t.Errorf("long call: %v", err)
		}
	}()
	other := idem.NewGuard(store)
	for i := 0; i < 5; i++ {
		time.Sleep(170 * time.Millisecond)
		_, err := call(context.Background(), other, spec, "k", func(ctx context.Context) (int, error) { return 2, nil })
		if err != nil && !errors.Is(err, idem.ErrInProgress) {
			t.Fatalf("duplicate during a heartbeated call: %v", err)
		}
		if err == nil {
			break // the first call finished
		}
	}
	<-done
}

func TestPayloadMismatch(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "test.Event"}
	run := func(id string, amount int64) (int64, error) {
		c, k := idemimpl.Begin(g, spec)
		k.Key().ID(id)
		p := k.Payload()
		p.String(id)
		p.Int(amount)
		return idem.Do(context.Background(), c, func(ctx context.Context) (int64, error) { return amount, nil })
	}
	if _, err := run("evt_1", 10); err != nil {
		t.Fatal(err)
	}
	if v, err := run("evt_1", 10); err != nil || v != 10 {
		t.Fatalf("same payload = %v, %v; want a replay", v, err)
	}
	if _, err := run("evt_1", 11); !errors.Is(err, idem.ErrPayloadMismatch) {
		t.Fatalf("other payload = %v, want ErrPayloadMismatch", err)
	}
	for _, bad := range []string{"", strings.Repeat("x", 256)} {
		if _, err := run(bad, 1); !errors.Is(err, idem.ErrInvalidKey) {
			t.Fatalf("ID of %d bytes: err = %v, want ErrInvalidKey", len(bad), err)
		}
	}
}

// failing is a store whose claims fail, as an unreachable server's would.
type failing struct{ idemstore.Store }

var errDown = errors.New("connection refused")

func (failing) Claim(context.Context, idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return idemstore.ClaimResult{}, errDown
}

func TestStoreUnavailable(t *testing.T) {
	for _, failOpen := range []bool{false, true} {
		t.Run(fmt.Sprint("failOpen=", failOpen), func(t *testing.T) {
			rec := &idemtest.Recorder{}
			opts := []idem.Option{idem.WithObserver(rec)}
			if failOpen {
				opts = append(opts, idem.WithFailOpen())
			}
			g := idem.NewGuard(failing{memstore.New()}, opts...)
			ran := false
			v, err := call(context.Background(), g, &idem.Spec{Name: "test.F"}, "k", func(ctx context.Context) (int, error) { ran = true; return 3, nil })
			if failOpen {
				if err != nil || v != 3 || !ran {
					t.Fatalf("fail open: %v, %v, ran=%v", v, err, ran)
				}
				if diff := cmp.Diff([]string{"store_error", "fail_open"}, rec.Outcomes()); diff != "" {
					t.Fatal(diff)
				}
				return
			}
			if !errors.Is(err, idem.ErrStoreUnavailable) || !errors.Is(err, errDown) || ran {
				t.Fatalf("fail closed: err = %v, ran = %v", err, ran)
			}
		})
	}
}

func TestStoreFull(t *testing.T) {
	g := idem.NewGuard(memstore.New(memstore.WithMaxRecords(2)))
	spec := &idem.Spec{Name: "test.Full"}
	one := func(ctx context.Context) (int, error) { return 1, nil }
	for _, k := range []string{"a", "b"} {
		if _, err := call(context.Background(), g, spec, k, one); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := call(context.Background(), g, spec, "c", one); !errors.Is(err, idem.ErrStoreFull) || !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("third key = %v, want ErrStoreFull", err)
	}
	if v, err := call(context.Background(), g, spec, "a", func(ctx context.Context) (int, error) { return 2, nil }); err != nil || v != 1 {
		t.Fatalf("replay at capacity = %v, %v; want 1", v, err)
	}
}

func TestStoreKeys(t *testing.T) {
	keyOf := func(g *idem.Guard, spec *idem.Spec, k string) string {
		var got string
		c := g.Begin(spec, k)
		idem.Do(context.Background(), c, func(ctx context.Context) (int, error) {
			l, _, _ := idem.LeaseFrom(ctx)
			got = l.Key
			return 0, nil
		})
		return got
	}
	spec := &idem.Spec{Name: "example.com/billing.Charge", Version: 3}
	plain := keyOf(idem.NewGuard(memstore.New()), spec, "x")
	if !regexp.MustCompile(`^idem:example\.com/billing\.Charge:v3:[0-9a-f]{64}$`).MatchString(plain) {
		t.Fatalf("store key %q does not have the form <prefix><name>:v<version>:<hash>", plain)
	}
	tests := []struct {
		name string
		g    *idem.Guard
		same bool
	}{
		{"same guard config", idem.NewGuard(memstore.New()), true},
		{"prefix", idem.NewGuard(memstore.New(), idem.WithKeyPrefix("app:")), false},
		{"hmac", idem.NewGuard(memstore.New(), idem.WithHMAC([]byte("secret"))), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			k := keyOf(tt.g, spec, "x")
			if (k == plain) != tt.same {
				t.Fatalf("key %q vs %q: same=%v, want %v", k, plain, k == plain, tt.same)
			}
		})
	}
	h1 := keyOf(idem.NewGuard(memstore.New(), idem.WithHMAC([]byte("secret"))), spec, "x")
	h2 := keyOf(idem.NewGuard(memstore.New(), idem.WithHMAC([]byte("secret"))), spec, "x")
	if h1 != h2 {
		t.Fatal("HMAC keys with one secret differ")
	}
	if k := keyOf(idem.NewGuard(memstore.New()), &idem.Spec{Name: spec.Name, Version: 4}, "x"); k == plain {
		t.Fatal("a version bump must change the key")
	}
}

func TestCompletionSurvivesCallerCancel(t *testing.T) {
	store := memstore.New()
	g := idem.NewGuard(store)
	spec := &idem.Spec{Name: "test.Cancel"}
	ctx, cancel := context.WithCancel(context.Background())
	v, err := call(ctx, g, spec, "k", func(context.Context) (int, error) { cancel(); return 5, nil })
	if err != nil || v != 5 {
		t.Fatalf("%v, %v", v, err)
	}
	v, err = call(context.Background(), g, spec, "k", func(context.Context) (int, error) { return 6, nil })
	if err != nil || v != 5 {
		t.Fatalf("replay = %v, %v; the effect ran, so its result must be recorded", v, err)
	}
}

func TestErrorOnlyFunction(t *testing.T) {
	g := idem.NewGuard(bytesOnly{memstore.New()})
	spec := &idem.Spec{Name: "test.Send"}
	var runs int
	for i := 0; i < 3; i++ {
		if _, err := call(context.Background(), g, spec, "k", func(context.Context) (struct{}, error) { runs++; return struct{}{}, nil }); err != nil {
			t.Fatal(err)
		}
	}
	if runs != 1 {
		t.Fatalf("ran %d times", runs)
	}
}

// Every call ends with exactly one final event, whatever happens on the way.
func TestOneFinalEventPerCall(t *testing.T) {
	rec := &idemtest.Recorder{}
	store := memstore.New()
	g := idem.NewGuard(store, idem.WithObserver(rec))
	ctx := context.Background()
	spec := &idem.Spec{Name: "test.Final"}
	ok := func(context.Context) (int, error) { return 1, nil }
	bad := func(context.Context) (int, error) { return 0, errors.New("no") }
	calls := 0
	do := func(g *idem.Guard, key string, fn func(context.Context) (int, error)) {
		calls++
		call(ctx, g, spec, key, fn)
	}
	do(g, "a", ok)  // executed
	do(g, "a", ok)  // replayed
	do(g, "b", bad) // failed
	c, k := idemimpl.Begin(g, spec)
	k.Key().ID("")
	calls++
	idem.Do(ctx, c, ok) // invalid key
	open := idem.NewGuard(failing{store}, idem.WithObserver(rec), idem.WithFailOpen())
	do(open, "c", ok) // store_error (note), fail_open (final)
	final := 0
	for _, e := range rec.Events() {
		if e.Final {
			final++
		}
	}
	if final != calls {
		t.Fatalf("%d calls reported %d final events: %v", calls, final, rec.Outcomes())
	}
}

// tooSmall refuses results over 8 bytes, as every real store has some limit.
type tooSmall struct{ idemstore.Store }

func (s tooSmall) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	if len(r.Data) > 8 {
		return fmt.Errorf("%d bytes: %w", len(r.Data), idem.ErrResultTooLarge)
	}
	return s.Store.Complete(ctx, l, r)
}

func TestResultTooLarge(t *testing.T) {
	g := idem.NewGuard(tooSmall{memstore.New()})
	spec := &idem.Spec{Name: "test.Big"}
	runs := 0
	fn := func(context.Context) (string, error) { runs++; return "a long result", nil }
	v, err := call(context.Background(), g, spec, "k", fn)
	if !errors.Is(err, idem.ErrResultTooLarge) || v != "a long result" {
		t.Fatalf("first call = %q, %v; want the result and ErrResultTooLarge", v, err)
	}
	_, err = call(context.Background(), g, spec, "k", fn)
	var rec *idem.RecordedError
	if !errors.As(err, &rec) || runs != 1 {
		t.Fatalf("duplicate = %v after %d runs; want a recorded failure and no second run", err, runs)
	}
}

// The key memo must be invisible: the same keys and fingerprints, and
// mismatches still caught, with it and without it.
func TestKeyMemoIsTransparent(t *testing.T) {
	type keyed struct {
		spec    *idem.Spec
		id      string
		payload int64
	}
	specA := &idem.Spec{Name: "test.A"}
	specB := &idem.Spec{Name: "test.B"}
	specA2 := &idem.Spec{Name: "test.A", Version: 2}
	calls := []keyed{{specA, "x", 1}, {specA, "x", 1}, {specB, "x", 1}, {specA2, "x", 1}, {specA, "y", 1}, {specA, "x", 2}}
	keysWith := func(g *idem.Guard) []string {
		var out []string
		for _, k := range calls {
			c, m := idemimpl.Begin(g, k.spec)
			m.Key().String(k.id)
			m.Payload().Int(k.payload)
			key, err := c.StoreKey()
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, key)
		}
		return out
	}
	with, without := keysWith(idem.NewGuard(memstore.New())), keysWith(idem.NewGuard(memstore.New(), idem.WithKeyMemo(0)))
	if diff := cmp.Diff(without, with); diff != "" {
		t.Fatalf("keys with the memo differ (-without +with):\n%s", diff)
	}
	if with[0] != with[1] || with[0] == with[2] || with[0] == with[3] || with[0] == with[4] || with[0] != with[5] {
		t.Fatalf("keys %v: same call must share a key; other function, version or ID must not", with)
	}
	// Same key, other payload: the memo must not hide the mismatch.
	g := idem.NewGuard(memstore.New(), idem.WithKeyMemo(2))
	run := func(amount int64) error {
		c, k := idemimpl.Begin(g, specA)
		k.Key().ID("evt")
		k.Payload().Int(amount)
		_, err := idem.Do(context.Background(), c, func(context.Context) (int64, error) { return amount, nil })
		return err
	}
	for i, tt := range []struct {
		amount int64
		want   error
	}{{1, nil}, {1, nil}, {2, idem.ErrPayloadMismatch}, {1, nil}, {3, idem.ErrPayloadMismatch}, {2, idem.ErrPayloadMismatch}} {
		if err := run(tt.amount); !errors.Is(err, tt.want) {
			t.Fatalf("call %d (amount %d) = %v, want %v", i, tt.amount, err, tt.want)
		}
	}
}

// unreachable heartbeats: every heartbeat fails, as when the store is cut off.
type noHeartbeats struct{ idemstore.Store }

func (noHeartbeats) Heartbeat(context.Context, idemstore.Lease) error { return errDown }

// A function whose heartbeats cannot reach the store is stopped when its
// lease runs out (counted from the claim), not a heartbeat later: by then
// the store may already have handed the key to someone else.
func TestLeaseRunsOutWithoutHeartbeats(t *testing.T) {
	rec := &idemtest.Recorder{}
	g := idem.NewGuard(noHeartbeats{memstore.New()}, idem.WithObserver(rec))
	const lease = 90 * time.Millisecond
	spec := &idem.Spec{Name: "test.CutOff", Lease: lease}
	start := time.Now()
	var stopped time.Duration
	var cause error
	_, err := call(context.Background(), g, spec, "k", func(ctx context.Context) (int, error) {
		select {
		case <-ctx.Done():
			stopped, cause = time.Since(start), context.Cause(ctx)
			return 0, cause
		case <-time.After(5 * time.Second):
			return 1, nil
		}
	})
	if !errors.Is(cause, idem.ErrLeaseLost) || !errors.Is(err, idem.ErrLeaseLost) {
		t.Fatalf("cause = %v, Do = %v; want ErrLeaseLost", cause, err)
	}
	if stopped < lease || stopped > lease+lease/3+200*time.Millisecond {
		t.Fatalf("stopped after %v, want at the end of the %v lease", stopped, lease)
	}
	if got := rec.Outcomes(); !slicesContain(got, "heartbeat_failed") || !slicesContain(got, "lease_lost") {
		t.Fatalf("outcomes %v", got)
	}
}

// refusing is a store whose claims fail as an unreachable networked store's
// do, already wrapped in ErrStoreUnavailable.
type refusing struct{ *memstore.Store }

func (refusing) Claim(context.Context, idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	return idemstore.ClaimResult{}, fmt.Errorf("%w: dial tcp 127.0.0.1:1: connect: connection refused", idem.ErrStoreUnavailable)
}

// A store error that already says "store unavailable" is not wrapped in it
// again: the message said it twice.
func TestStoreUnavailableSaidOnce(t *testing.T) {
	g := idem.NewGuard(refusing{memstore.New()})
	_, err := call(context.Background(), g, &idem.Spec{Name: "test.Refused"}, "k", func(context.Context) (int, error) { return 1, nil })
	if !errors.Is(err, idem.ErrStoreUnavailable) {
		t.Fatalf("err = %v, want ErrStoreUnavailable", err)
	}
	if n := strings.Count(err.Error(), "store unavailable"); n != 1 {
		t.Fatalf("%q says \"store unavailable\" %d times, want once", err, n)
	}
}

// A Call is used once: Do and StoreKey refuse a finished Call (a Call has
// no way left to write key material), while a call begun meanwhile,
// which may reuse its pooled memory, keeps its own key.
func TestCallUsedTwice(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	spec := &idem.Spec{Name: "test.Twice"}
	ctx := context.Background()
	ran := 0
	fn := func(context.Context) (int, error) { ran++; return ran, nil }
	c, k := idemimpl.Begin(g, spec)
	k.Key().String("a")
	if _, err := idem.Do(ctx, c, fn); err != nil {
		t.Fatal(err)
	}
	other, k := idemimpl.Begin(g, spec)
	k.Key().String("b")
	if _, err := idem.Do(ctx, c, fn); err == nil {
		t.Fatalf("Do of a finished call: %v, want an error", err)
	}
	if _, err := c.StoreKey(); err == nil {
		t.Fatalf("StoreKey of a finished call: %v, want an error", err)
	}
	want, k := idemimpl.Begin(g, spec)
	k.Key().String("b")
	wantKey, _ := want.StoreKey()
	if got, err := other.StoreKey(); err != nil || got != wantKey {
		t.Fatalf("key of the call begun meanwhile = %q, %v; want %q", got, err, wantKey)
	}
	if ran != 1 {
		t.Fatalf("fn ran %d times, want 1", ran)
	}
}
