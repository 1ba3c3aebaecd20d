package idemhttp_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestKeyExpiresAfterTTL: the published expiration policy holds: a
// response is replayed for WithTTL, and after it the key is free again.
func TestKeyExpiresAfterTTL(t *testing.T) {
	var mu sync.Mutex
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return at }
	advance := func(d time.Duration) { mu.Lock(); at = at.Add(d); mu.Unlock() }
	g := idem.NewGuard(memstore.New(memstore.WithClock(now)), idem.WithClock(now))
	a := &app{}
	h := newMW(t, g, withTTL(time.Hour)).Handler(a)
	q := req{key: []string{"k"}, client: "a", body: "x"}
	var got []resp
	got = append(got, first(send(t, h, q)))
	advance(59 * time.Minute)
	got = append(got, first(send(t, h, q)))
	advance(2 * time.Minute)
	got = append(got, first(send(t, h, q)))
	want := []resp{
		{Status: 201, CType: jsonCT, Run: 1},
		{Status: 201, CType: jsonCT, Run: 1, Replayed: "true"},
		{Status: 201, CType: jsonCT, Run: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
}

func first[A, B any](a A, _ B) A { return a }

// deadStore is an instance that dies right after its claim: the claim
// reaches the shared store, nothing after it does.
type deadStore struct{ *memstore.Store }

func (deadStore) Heartbeat(context.Context, idemstore.Lease) error                  { return nil }
func (deadStore) Complete(context.Context, idemstore.Lease, idemstore.Result) error { return nil }
func (deadStore) Fail(context.Context, idemstore.Lease, idemstore.Result) error     { return nil }
func (deadStore) Release(context.Context, idemstore.Lease) error                    { return nil }

// TestKeyReusedAfterCrashOrRelease: a key stays bound to its first
// request's payload for as long as its record is retained. After the first
// request's instance crashed (its lease expired) or its handler failed
// (the key was released), a request with another body is still a 422 and
// never reaches the handler, and a retry of the first body takes the key
// over or runs again.
func TestKeyReusedAfterCrashOrRelease(t *testing.T) {
	reused := resp{Status: 422, CType: problemCT, Code: "idempotency-key-reused"}
	a, b := req{key: []string{"k"}, client: "c", body: `{"amount":5}`}, req{key: []string{"k"}, client: "c", body: `{"amount":500}`}
	tests := []struct {
		name string
		// first sends the first request with body a and leaves the key
		// as a crash or a failure does.
		first func(t *testing.T, clock *idemtest.Clock, store *memstore.Store, app *app) resp
		want  resp
	}{
		{"crashed instance", func(t *testing.T, clock *idemtest.Clock, store *memstore.Store, app *app) resp {
			got, _ := send(t, newMW(t, idem.NewGuard(deadStore{store}), withLease(time.Second)).Handler(app), a)
			clock.Advance(2 * time.Second) // past the dead instance's lease
			return got
		}, resp{Status: 201, CType: jsonCT, Run: 1}},
		{"handler failed", func(t *testing.T, clock *idemtest.Clock, store *memstore.Store, app *app) resp {
			app.status = http.StatusServiceUnavailable // a 5xx releases the key
			defer func() { app.status = 0 }()
			got, _ := send(t, newMW(t, idem.NewGuard(store), withLease(time.Second)).Handler(app), a)
			return got
		}, resp{Status: 503, CType: jsonCT, Run: 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clock := idemtest.NewClock(time.Now())
			store := memstore.New(memstore.WithClock(clock.Now))
			app := &app{}
			if diff := cmp.Diff(tt.want, tt.first(t, clock, store, app)); diff != "" {
				t.Fatalf("first request (-want +got):\n%s", diff)
			}
			h := newMW(t, idem.NewGuard(store), withLease(time.Second)).Handler(app)
			var got []resp
			for _, q := range []req{b, a, b, a} {
				r, _ := send(t, h, q)
				got = append(got, r)
			}
			want := []resp{reused, {Status: 201, CType: jsonCT, Run: 2}, reused, {Status: 201, CType: jsonCT, Run: 2, Replayed: "true"}}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("other body, retry, other body, retry (-want +got):\n%s", diff)
			}
			if n := app.runs.Load(); n != 2 {
				t.Errorf("handler ran %d times, want 2 (the first request and its retry; never the other body)", n)
			}
		})
	}
}
