package idemhttp_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// TestSessionAndHopByHopHeadersOfTheFirstClientAreNotReplayedToAnother:
// with WithoutPrincipal, a second client presenting the same key gets the
// first response replayed. Its per-client headers (a session cookie, an
// authentication answer) must not travel with it, and headers that
// describe the first connection (hop-by-hop, and any header the response's
// Connection names) are not part of the response at all. The first client
// still gets its Set-Cookie. Before, Set-Cookie was recorded and replayed
// verbatim.
func TestSessionAndHopByHopHeadersOfTheFirstClientAreNotReplayedToAnother(t *testing.T) {
	setHeaders := func(w http.ResponseWriter, _ *http.Request) {
		h := w.Header()
		h.Add("Set-Cookie", "session=alice-secret; HttpOnly")
		h.Add("Set-Cookie", "csrf=alice-token")
		h.Set("Set-Cookie2", "legacy=alice")
		h.Set("Authentication-Info", `nextnonce="alice"`)
		h.Set("Proxy-Authentication-Info", `nextnonce="alice-proxy"`)
		h.Set("Connection", "X-Conn-Scoped")
		h.Set("X-Conn-Scoped", "alice-connection")
		h.Set("Keep-Alive", "timeout=5")
		h.Set("Proxy-Authenticate", "Basic")
		h.Set("Proxy-Authorization", "Basic YWxpY2U6c2VjcmV0")
		h.Set("Te", "trailers")
		h.Set("Upgrade", "h2c")
		h.Set("Location", "/payments/1")
	}
	names := []string{"Set-Cookie", "Set-Cookie2", "Authentication-Info", "Proxy-Authentication-Info",
		"Connection", "X-Conn-Scoped", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Upgrade", "Location", "Idempotent-Replayed"}
	pick := func(h http.Header) http.Header {
		out := http.Header{}
		for _, n := range names {
			if vs := h.Values(n); len(vs) > 0 {
				out[n] = vs
			}
		}
		return out
	}
	session := http.Header{
		"Set-Cookie":                {"session=alice-secret; HttpOnly", "csrf=alice-token"},
		"Set-Cookie2":               {"legacy=alice"},
		"Authentication-Info":       {`nextnonce="alice"`},
		"Proxy-Authentication-Info": {`nextnonce="alice-proxy"`},
	}
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		for i := 0; i < len(kv); i += 2 {
			h.Add(kv[i], kv[i+1])
		}
		return h
	}
	tests := []struct {
		name        string
		opts        []idemhttp.Option
		first, next http.Header // the headers of names each client gets
	}{
		{
			name:  "default: session headers go to the first client only",
			first: with(session, "Location", "/payments/1"),
			next:  http.Header{"Location": {"/payments/1"}, "Idempotent-Replayed": {"true"}},
		},
		{
			name:  "WithReplayedHeaders(Set-Cookie) records and replays the cookies, nothing else",
			opts:  []idemhttp.Option{idemhttp.WithReplayedHeaders("set-cookie")},
			first: with(session, "Location", "/payments/1"),
			next: http.Header{"Location": {"/payments/1"}, "Idempotent-Replayed": {"true"},
				"Set-Cookie": {"session=alice-secret; HttpOnly", "csrf=alice-token"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := &app{hook: setHeaders}
			m, err := idemhttp.New(idem.NewGuard(memstore.New()), append([]idemhttp.Option{idemhttp.WithoutPrincipal()}, tt.opts...)...)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(a)
			r1, w1 := send(t, h, req{key: []string{"k"}, client: "alice"})
			r2, w2 := send(t, h, req{key: []string{"k"}, client: "mallory"})
			if r1.Status != http.StatusCreated || r2.Status != http.StatusCreated || a.runs.Load() != 1 {
				t.Fatalf("statuses %d, %d after %d runs; want 201, 201 (replay) after 1 run", r1.Status, r2.Status, a.runs.Load())
			}
			if diff := cmp.Diff(tt.first, pick(w1.Result().Header)); diff != "" {
				t.Errorf("first client's headers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.next, pick(w2.Result().Header)); diff != "" {
				t.Errorf("another client's replay (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWithReplayedHeadersRefusesHeadersItCannotReplay(t *testing.T) {
	for _, name := range []string{"Connection", "transfer-encoding", "X-Request-Id", ""} {
		if _, err := idemhttp.New(idem.NewGuard(memstore.New()), idemhttp.WithoutPrincipal(),
			idemhttp.WithReplayedHeaders(name)); err == nil {
			t.Errorf("WithReplayedHeaders(%q) accepted", name)
		}
	}
}

// TestInvalidStatusFromTheHandlerIsNotRecorded: a handler that calls
// WriteHeader with a status HTTP does not allow (0, two digits, four
// digits) or with 101 (an upgrade cannot happen behind a buffered
// response) has failed: the client gets a 500 problem, nothing is
// recorded, and a retry runs the handler again. Before, status 0 was
// recorded and every response with that key panicked in WriteHeader for
// the whole TTL.
func TestInvalidStatusFromTheHandlerIsNotRecorded(t *testing.T) {
	for _, status := range []int{0, 99, 1000, -1, http.StatusSwitchingProtocols} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			var runs atomic.Int64
			h := newMW(t, idem.NewGuard(memstore.New()), idemhttp.WithStore5xx()).Handler(
				http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					runs.Add(1)
					w.WriteHeader(status)
					w.Write([]byte("whatever")) //nolint:errcheck
				}))
			type outcome struct {
				Status int
				Code   string
				Panic  string
				Runs   int64
			}
			try := func() (o outcome) {
				defer func() {
					if p := recover(); p != nil {
						o.Panic = fmt.Sprint(p)
					}
					o.Runs = runs.Load()
				}()
				got, _ := send(t, h, req{key: []string{"k"}, client: "a"})
				o.Status, o.Code = got.Status, got.Code
				return o
			}
			got := []outcome{try(), try()}
			want := []outcome{
				{Status: 500, Code: "invalid-status", Runs: 1},
				{Status: 500, Code: "invalid-status", Runs: 2}, // released: runs again
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("two requests with one key (-want +got):\n%s", diff)
			}
		})
	}
}

// Informational statuses are not the outcome: the final status after them
// is recorded and replayed.
func TestInformationalStatusThenFinalIsRecorded(t *testing.T) {
	h := newMW(t, idem.NewGuard(memstore.New())).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusEarlyHints)
		w.WriteHeader(http.StatusAccepted)
		w.Write([]byte(strings.Repeat("x", 3))) //nolint:errcheck
	}))
	for i, want := range []string{"", "true"} {
		w := httptest.NewRecorder()
		r := httptest.NewRequest("POST", "/", nil)
		r.Header.Set("Idempotency-Key", "k")
		r.Header.Set("X-Client", "a")
		h.ServeHTTP(w, r)
		if w.Code != http.StatusAccepted || w.Body.String() != "xxx" || w.Header().Get("Idempotent-Replayed") != want {
			t.Errorf("request %d: %d %q replayed=%q", i, w.Code, w.Body.String(), w.Header().Get("Idempotent-Replayed"))
		}
	}
}
