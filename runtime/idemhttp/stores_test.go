package idemhttp_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/filestore"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// storeKinds returns a constructor per store kind; each call gives a store
// over the same records (one per "process"). The file store decodes every
// replay from its bytes. Redis and PostgreSQL live in modules of their
// own, which this module does not require; the conformance suite
// (runtime/idemtest) runs the Guard's contract on each of them.
var storeKinds = []struct {
	name string
	open func(t *testing.T) func() idemstore.Store
}{
	{"memory", func(t *testing.T) func() idemstore.Store {
		s := memstore.New()
		return func() idemstore.Store { return s }
	}},
	{"file", func(t *testing.T) func() idemstore.Store {
		dir := t.TempDir()
		return func() idemstore.Store {
			s, err := filestore.New(dir)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
	}},
}

// TestStores runs the middleware on each store: a replay decoded from
// the store's bytes (the memory store hands back the value itself) is
// byte-exact, and two instances sharing a store see 409 and 422.
func TestStores(t *testing.T) {
	for _, kind := range storeKinds {
		t.Run(kind.name, func(t *testing.T) {
			open := kind.open(t)
			started, release := make(chan struct{}), make(chan struct{})
			a := &app{hook: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Add("Set-Cookie", "a=1")
				w.Header().Add("Set-Cookie", "b=2")
				if r.URL.Path == "/block" {
					close(started)
					<-release
				}
			}}
			// Two instances of the service: separate Guards and stores
			// over the same records. The cookies carry no session here, so
			// they are replayed: a multi-valued header through each store.
			h1 := newMW(t, idem.NewGuard(open()), withLease(5*time.Second), idemhttp.WithReplayedHeaders("Set-Cookie")).Handler(a)
			h2 := newMW(t, idem.NewGuard(open()), withLease(5*time.Second), idemhttp.WithReplayedHeaders("Set-Cookie")).Handler(a)

			q := req{key: []string{"k1"}, client: "a", body: `{"amount":5}`}
			r1, w1 := send(t, h1, q)
			r2, w2 := send(t, h2, q)
			if diff := cmp.Diff(resp{Status: 201, CType: jsonCT, Run: 1}, r1); diff != "" {
				t.Errorf("first (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(resp{Status: 201, CType: jsonCT, Run: 1, Replayed: "true"}, r2); diff != "" {
				t.Errorf("replay on the other instance (-want +got):\n%s", diff)
			}
			hdr1, hdr2 := w1.Result().Header, w2.Result().Header
			hdr2.Del("Idempotent-Replayed")
			if diff := cmp.Diff(hdr1, hdr2); diff != "" {
				t.Errorf("replayed headers (-first +replay):\n%s", diff)
			}
			if diff := cmp.Diff(w1.Body.Bytes(), w2.Body.Bytes()); diff != "" {
				t.Errorf("replayed body (-first +replay):\n%s", diff)
			}

			if got, _ := send(t, h2, req{key: []string{"k1"}, client: "a", body: `{"amount":6}`}); got.Status != 422 {
				t.Errorf("mismatch on the other instance: %d", got.Status)
			}
			if got, _ := send(t, h2, req{key: []string{"k1"}, client: "b", body: `{"amount":6}`}); got.Status != 201 || got.Replayed != "" {
				t.Errorf("other principal, same key: %+v", got)
			}

			// In flight on instance 1: instance 2 answers 409 from the store.
			done := make(chan resp)
			go func() {
				r, _ := send(t, h1, req{key: []string{"k2"}, client: "a", path: "/block"})
				done <- r
			}()
			<-started
			got, _ := send(t, h2, req{key: []string{"k2"}, client: "a", path: "/block"})
			if diff := cmp.Diff(resp{Status: 409, CType: problemCT, Code: "request-in-progress", RetryAfter: "1"}, got); diff != "" {
				t.Errorf("in flight on the other instance (-want +got):\n%s", diff)
			}
			close(release)
			<-done
			if got, _ := send(t, h2, req{key: []string{"k2"}, client: "a", path: "/block"}); got.Replayed != "true" {
				t.Errorf("after the first finished: %+v", got)
			}
		})
	}
}

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
