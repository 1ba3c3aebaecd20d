package idemhttp_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemcall"
	"github.com/idemgen/idemgen/runtime/idemhttp"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// principalHeader identifies the client in these tests (a stand-in for
// whatever authentication put in the request).
func principal(r *http.Request) (string, error) {
	p := r.Header.Get("X-Client")
	if p == "" {
		return "", errors.New("no X-Client header")
	}
	return p, nil
}

// app is a handler that counts its runs and answers 201 with a body that
// differs per run, so a replay is distinguishable from a second run.
type app struct {
	runs atomic.Int64
	// status and extra behavior per test
	status int
	hook   func(w http.ResponseWriter, r *http.Request)
}

func (a *app) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := a.runs.Add(1)
	if a.hook != nil {
		a.hook(w, r)
	}
	body, _ := io.ReadAll(r.Body)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Add("X-Multi", "a")
	w.Header().Add("X-Multi", "b")
	status := a.status
	if status == 0 {
		status = http.StatusCreated
	}
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"run":%d,"echo":%q}`, n, body)
}

type req struct {
	method  string
	path    string
	key     []string // Idempotency-Key values; nil = none
	client  string
	body    string
	headers map[string]string
	chunked bool // unknown Content-Length
}

type resp struct {
	Status     int
	Replayed   string
	RetryAfter string
	CType      string
	Code       string // problem "code" member, or ""
	Run        int    // the app's "run" member, or 0
}

func send(t *testing.T, h http.Handler, q req) (resp, *httptest.ResponseRecorder) {
	t.Helper()
	if q.method == "" {
		q.method = http.MethodPost
	}
	if q.path == "" {
		q.path = "/payments"
	}
	var body io.Reader = strings.NewReader(q.body)
	if q.chunked {
		body = io.MultiReader(strings.NewReader(q.body)) // hides the length
	}
	r := httptest.NewRequest(q.method, q.path, body)
	if q.chunked {
		r.ContentLength = -1
	}
	for _, k := range q.key {
		r.Header.Add("Idempotency-Key", k)
	}
	if q.client != "" {
		r.Header.Set("X-Client", q.client)
	}
	for k, v := range q.headers {
		r.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	res := w.Result()
	out := resp{
		Status:     res.StatusCode,
		Replayed:   res.Header.Get("Idempotent-Replayed"),
		RetryAfter: res.Header.Get("Retry-After"),
		CType:      res.Header.Get("Content-Type"),
	}
	var m struct {
		Code string `json:"code"`
		Run  int    `json:"run"`
	}
	if err := json.Unmarshal(w.Body.Bytes(), &m); err == nil {
		out.Code, out.Run = m.Code, m.Run
	}
	return out, w
}

func newMW(t *testing.T, g *idem.Guard, opts ...idemhttp.Option) *idemhttp.Middleware {
	t.Helper()
	m, err := idemhttp.New(g, append([]idemhttp.Option{idemhttp.WithPrincipal(principal)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func discardLog() *log.Logger { return log.New(io.Discard, "", 0) }

const jsonCT = "application/json"
const problemCT = "application/problem+json"

func TestStatusCodes(t *testing.T) {
	sent := func(status, run int) resp { return resp{Status: status, CType: jsonCT, Run: run} }
	replay := func(r resp) resp { r.Replayed = "true"; return r }
	created := func(run int) resp { return sent(201, run) }
	replayed := func(run int) resp { return replay(created(run)) }
	problem := func(status int, code string) resp { return resp{Status: status, CType: problemCT, Code: code} }
	k := []string{"k-1"}
	twice := []req{{key: k, client: "a"}, {key: k, client: "a"}} // the same request again

	tests := []struct {
		name     string
		opts     []idemhttp.Option
		status   int // app status
		reqs     []req
		want     []resp
		wantRuns int64
	}{
		{
			name:     "first run then replay",
			reqs:     []req{{key: k, client: "a", body: "x"}, {key: k, client: "a", body: "x"}},
			want:     []resp{created(1), replayed(1)},
			wantRuns: 1,
		},
		{
			name:     "quoted and bare forms are the same key",
			reqs:     []req{{key: []string{`"k-1"`}, client: "a"}, {key: k, client: "a"}},
			want:     []resp{created(1), replayed(1)},
			wantRuns: 1,
		},
		{
			name:     "missing key is 400",
			reqs:     []req{{client: "a"}},
			want:     []resp{problem(400, "idempotency-key-missing")},
			wantRuns: 0,
		},
		{
			name: "malformed keys are 400",
			reqs: []req{
				{key: []string{""}, client: "a"},
				{key: []string{`""`}, client: "a"},
				{key: []string{"a b"}, client: "a"},
				{key: []string{`"unterminated`}, client: "a"},
				{key: []string{`"bad\escape"`}, client: "a"},
				{key: []string{"k-1", "k-2"}, client: "a"},
				{key: []string{strings.Repeat("x", 256)}, client: "a"},
				{key: []string{"caf\u00e9"}, client: "a"},
			},
			want: []resp{
				problem(400, "idempotency-key-malformed"), problem(400, "idempotency-key-malformed"),
				problem(400, "idempotency-key-malformed"), problem(400, "idempotency-key-malformed"),
				problem(400, "idempotency-key-malformed"), problem(400, "idempotency-key-malformed"),
				problem(400, "idempotency-key-malformed"), problem(400, "idempotency-key-malformed"),
			},
			wantRuns: 0,
		},
		{
			name:     "255-byte key is accepted",
			reqs:     []req{{key: []string{strings.Repeat("x", 255)}, client: "a"}},
			want:     []resp{created(1)},
			wantRuns: 1,
		},
		{
			name:     "optional key: no key runs unguarded",
			opts:     []idemhttp.Option{idemhttp.WithOptionalKey()},
			reqs:     []req{{client: "a"}, {client: "a"}, {key: []string{"a b"}, client: "a"}},
			want:     []resp{created(1), created(2), problem(400, "idempotency-key-malformed")},
			wantRuns: 2,
		},
		{
			name:     "methods outside the set pass through",
			reqs:     []req{{method: "GET"}, {method: "PUT", key: k}, {method: "DELETE"}},
			want:     []resp{created(1), created(2), created(3)},
			wantRuns: 3,
		},
		{
			name:     "WithMethods",
			opts:     []idemhttp.Option{idemhttp.WithMethods("PUT")},
			reqs:     []req{{method: "PUT", client: "a"}, {method: "POST", client: "a"}},
			want:     []resp{problem(400, "idempotency-key-missing"), created(1)},
			wantRuns: 1,
		},
		{
			name:     "different body is 422",
			reqs:     []req{{key: k, client: "a", body: "x"}, {key: k, client: "a", body: "y"}, {key: k, client: "a", body: "x"}},
			want:     []resp{created(1), problem(422, "idempotency-key-reused"), replayed(1)},
			wantRuns: 1,
		},
		{
			name: "large bodies: same replays, different is 422",
			reqs: []req{
				{key: k, client: "a", body: strings.Repeat("x", 5000)},
				{key: k, client: "a", body: strings.Repeat("x", 5000)},
				{key: k, client: "a", body: strings.Repeat("x", 4999) + "y"},
			},
			want:     []resp{created(1), replayed(1), problem(422, "idempotency-key-reused")},
			wantRuns: 1,
		},
		{
			name:     "different path is 422",
			reqs:     []req{{key: k, client: "a", path: "/a"}, {key: k, client: "a", path: "/b"}},
			want:     []resp{created(1), problem(422, "idempotency-key-reused")},
			wantRuns: 1,
		},
		{
			name:     "different query is 422",
			reqs:     []req{{key: k, client: "a", path: "/a?x=1"}, {key: k, client: "a", path: "/a?x=2"}},
			want:     []resp{created(1), problem(422, "idempotency-key-reused")},
			wantRuns: 1,
		},
		{
			name:     "different method is 422",
			reqs:     []req{{key: k, client: "a"}, {method: "PATCH", key: k, client: "a"}},
			want:     []resp{created(1), problem(422, "idempotency-key-reused")},
			wantRuns: 1,
		},
		{
			name: "fingerprint headers: chosen one differs is 422, others are ignored",
			opts: []idemhttp.Option{idemhttp.WithFingerprintHeaders("content-type")},
			reqs: []req{
				{key: k, client: "a", headers: map[string]string{"Content-Type": "application/json", "User-Agent": "one"}},
				{key: k, client: "a", headers: map[string]string{"Content-Type": "application/json", "User-Agent": "two"}},
				{key: k, client: "a", headers: map[string]string{"Content-Type": "text/plain"}},
			},
			want:     []resp{created(1), replayed(1), problem(422, "idempotency-key-reused")},
			wantRuns: 1,
		},
		{
			name:     "unidentified principal is 401",
			reqs:     []req{{key: k}},
			want:     []resp{problem(401, "principal-unknown")},
			wantRuns: 0,
		},
		{
			name:     "principals are isolated",
			reqs:     []req{{key: k, client: "a"}, {key: k, client: "b"}, {key: k, client: "a"}, {key: k, client: "b"}},
			want:     []resp{created(1), created(2), replayed(1), replayed(2)},
			wantRuns: 2,
		},
		{
			name:     "principals are isolated even with different bodies",
			reqs:     []req{{key: k, client: "a", body: "x"}, {key: k, client: "b", body: "y"}},
			want:     []resp{created(1), created(2)},
			wantRuns: 2,
		},
		{
			name: "request body over the limit is 413",
			opts: []idemhttp.Option{idemhttp.WithMaxRequestBytes(4)},
			reqs: []req{
				{key: k, client: "a", body: "12345"},
				{key: k, client: "a", body: "12345", chunked: true},
				{key: k, client: "a", body: "1234", chunked: true},
			},
			want:     []resp{problem(413, "request-too-large"), problem(413, "request-too-large"), created(1)},
			wantRuns: 1,
		},
		{
			name:     "5xx is sent, not recorded, and the key released",
			status:   503,
			reqs:     twice,
			want:     []resp{sent(503, 1), sent(503, 2)},
			wantRuns: 2,
		},
		{
			name:     "WithStore5xx records 5xx",
			opts:     []idemhttp.Option{idemhttp.WithStore5xx()},
			status:   500,
			reqs:     twice,
			want:     []resp{sent(500, 1), replay(sent(500, 1))},
			wantRuns: 1,
		},
		{
			name:     "4xx is recorded",
			status:   402,
			reqs:     twice,
			want:     []resp{sent(402, 1), replay(sent(402, 1))},
			wantRuns: 1,
		},
		{
			name:     "429 is not recorded",
			status:   429,
			reqs:     twice,
			want:     []resp{sent(429, 1), sent(429, 2)},
			wantRuns: 2,
		},
		{
			name:     "WithRecordIf",
			opts:     []idemhttp.Option{idemhttp.WithRecordIf(func(s int) bool { return s != 201 })},
			reqs:     twice,
			want:     []resp{created(1), created(2)},
			wantRuns: 2,
		},
		{
			name:     "response over the limit is a recorded 500",
			opts:     []idemhttp.Option{idemhttp.WithMaxResponseBytes(8)},
			reqs:     twice,
			want:     []resp{problem(500, "response-too-large"), replay(problem(500, "response-too-large"))},
			wantRuns: 1,
		},
		{
			name:     "WithoutPrincipal shares one key space",
			opts:     []idemhttp.Option{idemhttp.WithoutPrincipal()},
			reqs:     []req{{key: k, client: "a"}, {key: k, client: "b"}, {key: k}},
			want:     []resp{created(1), replayed(1), replayed(1)},
			wantRuns: 1,
		},
		{
			name:     "custom replay header and problem type",
			opts:     []idemhttp.Option{idemhttp.WithReplayHeader("X-Replayed")},
			reqs:     twice,
			want:     []resp{created(1), created(1)}, // the default header is absent
			wantRuns: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &app{status: tc.status}
			opts := tc.opts
			if !strings.HasPrefix(tc.name, "WithoutPrincipal") {
				opts = append([]idemhttp.Option{idemhttp.WithPrincipal(principal)}, opts...)
			}
			m, err := idemhttp.New(idem.NewGuard(memstore.New()), opts...)
			if err != nil {
				t.Fatal(err)
			}
			h := m.Handler(a)
			var got []resp
			for _, q := range tc.reqs {
				r, _ := send(t, h, q)
				got = append(got, r)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("responses (-want +got):\n%s", diff)
			}
			if n := a.runs.Load(); n != tc.wantRuns {
				t.Errorf("handler ran %d times, want %d", n, tc.wantRuns)
			}
		})
	}
}

// TestReplayIsByteExact compares the raw first response and its replay
// over a real connection: same status line, headers (but Date, the replay
// marker and the first client's Set-Cookie) and body bytes.
func TestReplayIsByteExact(t *testing.T) {
	a := &app{hook: func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "/payments/1")
		w.Header().Set("Set-Cookie", "a=b")
	}}
	m := newMW(t, idem.NewGuard(memstore.New()))
	srv := httptest.NewServer(m.Handler(a))
	defer srv.Close()

	do := func() (*http.Response, []byte) {
		r, _ := http.NewRequest("POST", srv.URL+"/payments", strings.NewReader(`{"amount":5}`))
		r.Header.Set("Idempotency-Key", `"abc"`)
		r.Header.Set("X-Client", "a")
		res, err := srv.Client().Do(r)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, b
	}
	first, b1 := do()
	second, b2 := do()
	if diff := cmp.Diff(string(b1), string(b2)); diff != "" {
		t.Errorf("body differs (-first +replay):\n%s", diff)
	}
	h1, h2 := first.Header.Clone(), second.Header.Clone()
	h1.Del("Date")
	h2.Del("Date")
	// The session cookie is the first client's only (WithReplayedHeaders).
	if got := h1.Values("Set-Cookie"); !cmp.Equal(got, []string{"a=b"}) {
		t.Errorf("first response's Set-Cookie = %q, want [a=b]", got)
	}
	h1.Del("Set-Cookie")
	if got := h2.Get("Idempotent-Replayed"); got != "true" {
		t.Errorf("replay marker = %q, want true", got)
	}
	h2.Del("Idempotent-Replayed")
	if diff := cmp.Diff(h1, h2); diff != "" {
		t.Errorf("headers differ (-first +replay):\n%s", diff)
	}
	if first.StatusCode != second.StatusCode || first.ContentLength != second.ContentLength {
		t.Errorf("status/length %d/%d vs %d/%d", first.StatusCode, first.ContentLength, second.StatusCode, second.ContentLength)
	}
	if diff := cmp.Diff([]string{"a", "b"}, h2.Values("X-Multi")); diff != "" {
		t.Errorf("multi-valued header (-want +got):\n%s", diff)
	}
}

// TestInFlight: a request with the key of a running request gets 409 with
// Retry-After, whether the running request is in this process (answered
// by the Guard in process) or another (two Guards over one store).
func TestInFlight(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sameGuard bool
	}{{"same process", true}, {"other process", false}} {
		t.Run(tc.name, func(t *testing.T) {
			store := memstore.New()
			started, release := make(chan struct{}), make(chan struct{})
			a := &app{hook: func(http.ResponseWriter, *http.Request) {
				close(started)
				<-release
			}}
			g1 := idem.NewGuard(store)
			g2 := g1
			if !tc.sameGuard {
				g2 = idem.NewGuard(store)
			}
			h1 := newMW(t, g1, idemhttp.WithRetryAfter(2*time.Second)).Handler(a)
			h2 := newMW(t, g2, idemhttp.WithRetryAfter(2*time.Second)).Handler(a)
			q := req{key: []string{"k"}, client: "a", body: "x"}
			done := make(chan resp)
			go func() {
				r, _ := send(t, h1, q)
				done <- r
			}()
			<-started
			got, _ := send(t, h2, q)
			want := resp{Status: 409, CType: problemCT, Code: "request-in-progress", RetryAfter: "2"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("in-flight duplicate (-want +got):\n%s", diff)
			}
			// A different payload while in flight is still a mismatch.
			got, _ = send(t, h2, req{key: []string{"k"}, client: "a", body: "y"})
			if got.Status != 422 {
				t.Errorf("in-flight mismatch: status %d, want 422", got.Status)
			}
			close(release)
			if r := <-done; r.Status != 201 {
				t.Errorf("first request: status %d", r.Status)
			}
			got, _ = send(t, h2, q)
			if diff := cmp.Diff(resp{Status: 201, CType: jsonCT, Run: 1, Replayed: "true"}, got); diff != "" {
				t.Errorf("after the first finished (-want +got):\n%s", diff)
			}
		})
	}
}

// TestWaitInFlight: with idemcall.WithWait a duplicate waits and replays.
func TestWaitInFlight(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	a := &app{hook: func(http.ResponseWriter, *http.Request) {
		close(started)
		<-release
	}}
	h := newMW(t, idem.NewGuard(memstore.New()), idemhttp.WithCall(idemcall.WithWait(5*time.Second))).Handler(a)
	q := req{key: []string{"k"}, client: "a"}
	go send(t, h, q)
	<-started
	time.AfterFunc(20*time.Millisecond, func() { close(release) })
	got, _ := send(t, h, q)
	if diff := cmp.Diff(resp{Status: 201, CType: jsonCT, Run: 1, Replayed: "true"}, got); diff != "" {
		t.Errorf("waiting duplicate (-want +got):\n%s", diff)
	}
}

// TestConcurrentSameKey: many simultaneous requests with one key run the
// handler exactly once; the rest get 409 or the replay.
func TestConcurrentSameKey(t *testing.T) {
	for _, sameGuard := range []bool{true, false} {
		t.Run(fmt.Sprintf("sameGuard=%v", sameGuard), func(t *testing.T) {
			store := memstore.New()
			a := &app{hook: func(http.ResponseWriter, *http.Request) { time.Sleep(20 * time.Millisecond) }}
			var guards []http.Handler
			g := idem.NewGuard(store)
			for range 4 {
				if !sameGuard {
					g = idem.NewGuard(store)
				}
				guards = append(guards, newMW(t, g).Handler(a))
			}
			const n = 32
			var wg sync.WaitGroup
			results := make([]resp, n)
			startGun := make(chan struct{})
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-startGun
					results[i], _ = send(t, guards[i%len(guards)], req{key: []string{"same"}, client: "a", body: "x"})
				}()
			}
			close(startGun)
			wg.Wait()
			if got := a.runs.Load(); got != 1 {
				t.Fatalf("handler ran %d times, want 1", got)
			}
			counts := map[string]int{}
			for _, r := range results {
				switch {
				case r.Status == 201 && r.Replayed == "" && r.Run == 1:
					counts["ran"]++
				case r.Status == 201 && r.Replayed == "true" && r.Run == 1:
					counts["replayed"]++
				case r.Status == 409 && r.RetryAfter == "1":
					counts["conflict"]++
				default:
					t.Errorf("unexpected response %+v", r)
				}
			}
			if counts["ran"] != 1 || counts["ran"]+counts["replayed"]+counts["conflict"] != n {
				t.Errorf("outcomes %v", counts)
			}
		})
	}
}

// TestPanicReleasesKey: a panicking handler releases the key (the next
// request runs the handler) and the panic reaches net/http.
func TestPanicReleasesKey(t *testing.T) {
	var panics atomic.Bool
	panics.Store(true)
	a := &app{hook: func(http.ResponseWriter, *http.Request) {
		if panics.Load() {
			panic("boom")
		}
	}}
	h := newMW(t, idem.NewGuard(memstore.New())).Handler(a)
	q := req{key: []string{"k"}, client: "a"}
	func() {
		defer func() {
			if p := recover(); p != "boom" {
				t.Errorf("recovered %v, want the handler's panic", p)
			}
		}()
		send(t, h, q)
		t.Error("no panic")
	}()
	panics.Store(false)
	got, _ := send(t, h, q)
	if diff := cmp.Diff(resp{Status: 201, CType: jsonCT, Run: 2}, got); diff != "" {
		t.Errorf("after the panic (-want +got):\n%s", diff)
	}

	// Over a real server: net/http recovers the panic and drops the
	// connection; the key is free again.
	panics.Store(true)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ErrorLog = discardLog()
	srv.Start()
	defer srv.Close()
	r, _ := http.NewRequest("POST", srv.URL, nil)
	r.Header.Set("Idempotency-Key", "k2")
	r.Header.Set("X-Client", "a")
	if res, err := srv.Client().Do(r); err == nil {
		res.Body.Close()
		t.Errorf("panicking handler answered %d", res.StatusCode)
	}
	panics.Store(false)
	// The retry is the same request (POST /, no body): the released key
	// still answers another one with 422.
	got, _ = send(t, h, req{path: "/", key: []string{"k2"}, client: "a"})
	if got.Status != 201 || got.Replayed != "" {
		t.Errorf("after a panic over a server: %+v", got)
	}
}

func TestStoreUnavailable(t *testing.T) {
	s := idemtest.NewOutageStore()
	s.SetDown(true)
	a := &app{}
	h := newMW(t, idem.NewGuard(s)).Handler(a)
	q := req{key: []string{"k"}, client: "a"}
	got, _ := send(t, h, q)
	want := resp{Status: 503, CType: problemCT, Code: "idempotency-store-unavailable", RetryAfter: "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("store down (-want +got):\n%s", diff)
	}
	if a.runs.Load() != 0 {
		t.Error("handler ran with the store down (fail closed expected)")
	}

	// Fail open runs the handler unguarded.
	hOpen := newMW(t, idem.NewGuard(s, idem.WithFailOpen())).Handler(a)
	if got, _ := send(t, hOpen, q); got.Status != 201 {
		t.Errorf("fail open: %+v", got)
	}

	// The store goes down after the claim: the handler ran, so the client
	// gets its response even though it could not be recorded.
	s.SetDown(false)
	a2 := &app{hook: func(http.ResponseWriter, *http.Request) { s.SetDown(true) }}
	h2 := newMW(t, idem.NewGuard(s)).Handler(a2)
	if got, _ := send(t, h2, req{key: []string{"k3"}, client: "a"}); got.Status != 201 || got.Run != 1 {
		t.Errorf("complete failed: %+v", got)
	}
}

// withLease and withTTL set the middleware's call options.
func withLease(d time.Duration) idemhttp.Option { return idemhttp.WithCall(idemcall.WithLease(d)) }

func withTTL(d time.Duration) idemhttp.Option { return idemhttp.WithCall(idemcall.WithTTL(d)) }

func TestNew(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	tests := []struct {
		name string
		g    *idem.Guard
		opts []idemhttp.Option
		want string // substring of the error; "" = ok
	}{
		{"no principal", g, nil, "needs WithPrincipal"},
		{"nil guard", nil, []idemhttp.Option{idemhttp.WithoutPrincipal()}, "nil Guard"},
		{"both", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithPrincipal(principal)}, "exclusive"},
		{"nil principal", g, []idemhttp.Option{idemhttp.WithPrincipal(nil)}, "WithPrincipal(nil)"},
		{"bad method", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithMethods("post")}, "upper-case"},
		{"bad limit", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithMaxRequestBytes(0)}, "positive"},
		{"nil record", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithRecordIf(nil)}, "WithRecordIf(nil)"},
		{"empty name", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithCall(idemcall.WithName(""))}, "WithName: empty name"},
		{"zero ttl", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), withTTL(0)}, "WithTTL(0s): must be positive"},
		{"no methods", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithMethods()}, "WithMethods: no methods"},
		{"empty fingerprint header", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithFingerprintHeaders("")}, "empty header name"},
		{"hop-by-hop replayed header", g, []idemhttp.Option{idemhttp.WithoutPrincipal(), idemhttp.WithReplayedHeaders("connection")}, "hop-by-hop"},
		{"opt out", g, []idemhttp.Option{idemhttp.WithoutPrincipal()}, ""},
		{"principal", g, []idemhttp.Option{idemhttp.WithPrincipal(principal), withTTL(time.Hour), withLease(time.Second)}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := idemhttp.New(tc.g, tc.opts...)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.want == "" && err != nil || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("New error %q, want containing %q", got, tc.want)
			}
		})
	}
}

// TestHandlerSeesFenceAndBody: the handler reads the full body and runs
// with the claim's fence in its context.
func TestHandlerSeesFenceAndBody(t *testing.T) {
	var fence uint64
	var body string
	h := newMW(t, idem.NewGuard(memstore.New())).Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fence, _ = idem.FenceFrom(r.Context())
		b, _ := io.ReadAll(r.Body)
		body = string(b)
		w.WriteHeader(http.StatusNoContent)
	}))
	got, w := send(t, h, req{key: []string{"k"}, client: "a", body: "payload"})
	if got.Status != 204 || fence != 1 || body != "payload" {
		t.Errorf("status %d fence %d body %q", got.Status, fence, body)
	}
	if cl := w.Header().Get("Content-Length"); cl != "" {
		t.Errorf("204 carries Content-Length %q", cl)
	}
	got, _ = send(t, h, req{key: []string{"k"}, client: "a", body: "payload"})
	if got.Status != 204 || got.Replayed != "true" {
		t.Errorf("replay of 204: %+v", got)
	}
}

// TestClientDisconnect: by default a client that gives up does not cancel
// the guarded handler, so its retry replays the finished outcome; with
// WithClientCancel the handler sees the cancellation.
func TestClientDisconnect(t *testing.T) {
	for _, tc := range []struct {
		name         string
		opts         []idemhttp.Option
		wantCanceled bool
		patience     time.Duration // how long the handler waits for a cancellation
	}{
		{"default detaches", nil, false, 100 * time.Millisecond},
		{"WithClientCancel", []idemhttp.Option{idemhttp.WithClientCancel()}, true, 10 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var canceled atomic.Bool
			started := make(chan struct{})
			a := &app{hook: func(w http.ResponseWriter, r *http.Request) {
				close(started)
				select {
				case <-r.Context().Done():
					canceled.Store(true)
				case <-time.After(tc.patience):
				}
			}}
			h := newMW(t, idem.NewGuard(memstore.New()), tc.opts...).Handler(a)
			ctx, cancel := context.WithCancel(context.Background())
			r := httptest.NewRequest("POST", "/p", nil).WithContext(ctx)
			r.Header.Set("Idempotency-Key", "k")
			r.Header.Set("X-Client", "a")
			go func() { <-started; cancel() }() // the client gives up while the handler runs
			h.ServeHTTP(httptest.NewRecorder(), r)
			if canceled.Load() != tc.wantCanceled {
				t.Errorf("handler saw cancellation: %v, want %v", canceled.Load(), tc.wantCanceled)
			}
		})
	}
}

// lostStore is a memory store whose heartbeats report the lease lost, as
// after another instance took the key over.
type lostStore struct{ *memstore.Store }

func (lostStore) Heartbeat(context.Context, idemstore.Lease) error {
	return fmt.Errorf("heartbeat: %w", idem.ErrLeaseLost)
}

// TestLeaseLost: the handler's context is canceled with cause
// ErrLeaseLost, nothing is recorded, and the client gets a 503 to retry.
func TestLeaseLost(t *testing.T) {
	var cause error
	a := &app{hook: func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
		cause = context.Cause(r.Context())
	}}
	h := newMW(t, idem.NewGuard(lostStore{memstore.New()}), withLease(30*time.Millisecond)).Handler(a)
	got, _ := send(t, h, req{key: []string{"k"}, client: "a"})
	want := resp{Status: 503, CType: problemCT, Code: "lease-lost", RetryAfter: "1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lease lost (-want +got):\n%s", diff)
	}
	if !errors.Is(cause, idem.ErrLeaseLost) {
		t.Errorf("handler ctx cause %v, want ErrLeaseLost", cause)
	}
}

// TestRoundTrips: a first request costs two store operations (claim,
// complete) and a replay one (claim).
func TestRoundTrips(t *testing.T) {
	s := idemtest.NewCountingStore()
	h := newMW(t, idem.NewGuard(s)).Handler(&app{})
	type ops struct{ Claims, Completes, Others int64 }
	snap := func() ops { return ops{s.Calls("claim"), s.Calls("complete"), s.Calls("release", "get", "wait")} }
	send(t, h, req{key: []string{"k"}, client: "a"})
	if diff := cmp.Diff(ops{1, 1, 0}, snap()); diff != "" {
		t.Errorf("first request (-want +got):\n%s", diff)
	}
	for range 10 {
		send(t, h, req{key: []string{"k"}, client: "a"})
	}
	if diff := cmp.Diff(ops{11, 1, 0}, snap()); diff != "" {
		t.Errorf("after 10 replays (-want +got):\n%s", diff)
	}
}
