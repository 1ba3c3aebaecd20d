package idemhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhook"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

var swKey = []byte("a webhook signing secret of 32 b")

func swSecret() string { return "whsec_" + base64.StdEncoding.EncodeToString(swKey) }

// delivery is a Standard Webhooks delivery, signed with key at ts.
func delivery(key []byte, id string, ts time.Time, body string) *http.Request {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id + "." + strconv.FormatInt(ts.Unix(), 10) + "." + body))
	r := httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
	r.Header.Set("webhook-id", id)
	r.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
	r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
	return r
}

type event struct {
	Type string `json:"type"`
	N    int    `json:"n"`
}

// counter is a handler that counts its runs by event.
type counter struct {
	mu   sync.Mutex
	runs map[int]int
}

func (c *counter) handle(_ context.Context, ev event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.runs == nil {
		c.runs = map[int]int{}
	}
	c.runs[ev.N]++
	return nil
}

func (c *counter) count(n int) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs[n]
}

func newReceiver(t *testing.T, s idemstore.Store, handle func(context.Context, event) error, opts ...idemhook.Option) http.Handler {
	t.Helper()
	v, err := idemhook.NewStandardWebhooks(swSecret())
	if err != nil {
		t.Fatal(err)
	}
	rc, err := idemhook.New(idem.NewGuard(s), v, handle, opts...)
	if err != nil {
		t.Fatal(err)
	}
	return rc
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// suppression sends a forged delivery (the real delivery's ID, a bad
// signature, another body) first, then the real one, and says what went
// wrong: the forgery must be refused without a store call, and the real
// delivery must run.
func suppression(h http.Handler, store *idemtest.CountingStore, c *counter) []string {
	var problems []string
	const real = `{"type":"invoice.paid","n":1}`
	forged := delivery([]byte("not the secret"), "msg_1", time.Now(), `{"type":"invoice.paid","n":666}`)
	if w := serve(h, forged); w.Code != http.StatusUnauthorized {
		problems = append(problems, "forged delivery answered "+strconv.Itoa(w.Code)+", want 401")
	}
	if n := store.Calls(); n != 0 {
		problems = append(problems, "forged delivery reached the store "+strconv.FormatInt(n, 10)+" times")
	}
	if w := serve(h, delivery(swKey, "msg_1", time.Now(), real)); w.Code != http.StatusOK || w.Header().Get(idemhook.ReplayHeader) != "" {
		problems = append(problems, "real delivery answered "+strconv.Itoa(w.Code)+" "+w.Header().Get(idemhook.ReplayHeader)+", want 200 processed")
	}
	if n := c.count(1); n != 1 {
		problems = append(problems, "real delivery ran "+strconv.Itoa(n)+" times, want 1")
	}
	if n := c.count(666); n != 0 {
		problems = append(problems, "forged delivery ran")
	}
	return problems
}

// claimFirst is the receiver the suppression attack beats: it claims the
// delivery ID and verifies inside the claim, answering a failed
// verification 401 but keeping the claim recorded (deduplicate, then
// verify).
func claimFirst(g *idem.Guard, v idemhook.Verifier, c *counter) http.Handler {
	spec := &idem.Spec{Name: "claim-first"}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		call, k := idemimpl.Begin(g, spec)
		k.Key().ID(r.Header.Get("webhook-id"))
		ok, err := idem.Do(r.Context(), call, func(ctx context.Context) (bool, error) {
			if _, err := v.Verify(r.Header, body); err != nil {
				return false, nil
			}
			var ev event
			ev.N = 1
			return true, c.handle(ctx, ev)
		})
		if err == nil && !ok {
			w.WriteHeader(http.StatusUnauthorized)
		}
	})
}

// TestForgedDeliveryNeverSuppressesReal: a forged delivery carrying a
// real delivery's ID is refused before the store sees it, and the real one
// runs. The same scenario against a receiver that claims before it
// verifies finds the suppression, so the check can fail.
func TestForgedDeliveryNeverSuppressesReal(t *testing.T) {
	store := idemtest.NewCountingStore()
	c := &counter{}
	if problems := suppression(newReceiver(t, store, c.handle), store, c); len(problems) > 0 {
		t.Errorf("receiver: %s", strings.Join(problems, "; "))
	}

	store = idemtest.NewCountingStore()
	c = &counter{}
	v, _ := idemhook.NewStandardWebhooks(swSecret())
	if problems := suppression(claimFirst(idem.NewGuard(store), v, c), store, c); len(problems) == 0 {
		t.Error("the scenario does not catch a receiver that claims before it verifies")
	}
}

// TestAnswers: what each kind of delivery is answered, and whether it
// reaches the store.
func TestAnswers(t *testing.T) {
	now := time.Now()
	body := `{"type":"a","n":1}`
	big := `{"type":"` + strings.Repeat("x", 200) + `","n":1}`
	tests := []struct {
		name      string
		before    *http.Request // sent first (a real delivery)
		r         *http.Request
		wantCode  int
		wantStore bool // the request reaches the store
	}{
		{"real", nil, delivery(swKey, "m1", now, body), 200, true},
		{"GET", nil, httptest.NewRequest(http.MethodGet, "/hooks", nil), 405, false},
		{"too large", nil, delivery(swKey, "m1", now, big), 413, false},
		{"bad signature", nil, delivery([]byte("x"), "m1", now, body), 401, false},
		{"no headers", nil, httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body)), 400, false},
		{"stale replay", nil, delivery(swKey, "m1", now.Add(-10*time.Minute), body), 400, false},
		{"signed but not the handler's type", nil, delivery(swKey, "m1", now, `{"n":"one"}`), 400, false},
		{"ID too long", nil, delivery(swKey, strings.Repeat("m", 256), now, body), 400, false},
		{"same ID, other signed body", delivery(swKey, "m1", now, body), delivery(swKey, "m1", now, `{"type":"b","n":1}`), 422, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := idemtest.NewCountingStore()
			h := newReceiver(t, store, (&counter{}).handle, idemhook.WithMaxBodyBytes(100))
			if tt.before != nil {
				serve(h, tt.before)
			}
			before := store.Calls()
			w := serve(h, tt.r)
			if w.Code != tt.wantCode {
				t.Errorf("status %d, want %d (%s)", w.Code, tt.wantCode, w.Body)
			}
			if got := store.Calls() > before; got != tt.wantStore {
				t.Errorf("reached the store: %v, want %v", got, tt.wantStore)
			}
		})
	}
}

// TestDuplicatesAndFailures: a completed delivery's duplicate is 200 at
// once; a failing handler releases the ID (500, the retry runs again) or,
// with WithRecordFailures, records it (500, then 200 without a run).
func TestDuplicatesAndFailures(t *testing.T) {
	type answer struct {
		Code     int
		Replayed string
		Runs     int
	}
	tests := []struct {
		name string
		opts []idemhook.Option
		fail int // the first fail runs return an error
		want []answer
	}{
		{"duplicate", nil, 0, []answer{{200, "", 1}, {200, "true", 1}, {200, "true", 1}}},
		{"failure releases", nil, 1, []answer{{500, "", 1}, {200, "", 2}, {200, "true", 2}}},
		{"failure recorded", []idemhook.Option{idemhook.WithRecordFailures()}, 1, []answer{{500, "", 1}, {200, "failed", 1}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := 0
			h := newReceiver(t, memstore.New(), func(context.Context, event) error {
				runs++
				if runs <= tt.fail {
					return errors.New("downstream unavailable")
				}
				return nil
			}, tt.opts...)
			var got []answer
			for range tt.want {
				w := serve(h, delivery(swKey, "m1", time.Now(), `{"n":1}`))
				got = append(got, answer{w.Code, w.Header().Get(idemhook.ReplayHeader), runs})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestInProgress: a duplicate of a running delivery waits for it and gets
// its answer; past the wait it is 409 with Retry-After; with accept it is
// 202 at once. Each instance has its own Guard over one store, so the
// duplicate meets the run in the store, not in process.
func TestInProgress(t *testing.T) {
	tests := []struct {
		name     string
		opt      idemhook.Option
		release  time.Duration // the first run ends this long after the duplicate arrives
		wantCode int
	}{
		{"waits and replays", idemhook.WithInProgress(5*time.Second, false), 50 * time.Millisecond, 200},
		{"409 past the wait", idemhook.WithInProgress(50*time.Millisecond, false), time.Second, 409},
		{"202 at once", idemhook.WithInProgress(0, true), time.Second, 202},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := memstore.New()
			started, release := make(chan struct{}), make(chan struct{})
			first := newReceiver(t, store, func(context.Context, event) error {
				close(started)
				<-release
				return nil
			}, tt.opt)
			second := newReceiver(t, store, func(context.Context, event) error {
				t.Error("the duplicate ran")
				return nil
			}, tt.opt)
			done := make(chan int)
			go func() { done <- serve(first, delivery(swKey, "m1", time.Now(), `{"n":1}`)).Code }()
			<-started
			time.AfterFunc(tt.release, func() { close(release) })
			w := serve(second, delivery(swKey, "m1", time.Now(), `{"n":1}`))
			if w.Code != tt.wantCode {
				t.Errorf("duplicate: %d, want %d", w.Code, tt.wantCode)
			}
			if w.Code == 409 && w.Header().Get("Retry-After") == "" {
				t.Error("409 without Retry-After")
			}
			if code := <-done; code != 200 {
				t.Errorf("first: %d", code)
			}
		})
	}
}

func TestNewRefuses(t *testing.T) {
	v, _ := idemhook.NewStandardWebhooks(swSecret())
	g := idem.NewGuard(memstore.New())
	h := (&counter{}).handle
	tests := []struct {
		name string
		err  func() error
	}{
		{"nil guard", func() error { _, err := idemhook.New(nil, v, h); return err }},
		{"nil verifier", func() error { _, err := idemhook.New[event](g, nil, h); return err }},
		{"nil handler", func() error { _, err := idemhook.New[event](g, v, nil); return err }},
		{"empty name", func() error { _, err := idemhook.New(g, v, h, idemhook.WithName("")); return err }},
		{"zero TTL", func() error { _, err := idemhook.New(g, v, h, idemhook.WithTTL(0)); return err }},
		{"zero body", func() error { _, err := idemhook.New(g, v, h, idemhook.WithMaxBodyBytes(0)); return err }},
		{"negative wait", func() error { _, err := idemhook.New(g, v, h, idemhook.WithInProgress(-1, false)); return err }},
		{"wrapped: nil verifier", func() error { _, err := idemhook.NewWrapped[event](nil, h); return err }},
		{"wrapped: nil handler", func() error { _, err := idemhook.NewWrapped[event](v, nil); return err }},
		// The wrapper's annotation sets these; a receiver option would be ignored.
		{"wrapped: name", func() error { _, err := idemhook.NewWrapped(v, h, idemhook.WithName("x")); return err }},
		{"wrapped: ttl", func() error { _, err := idemhook.NewWrapped(v, h, idemhook.WithTTL(time.Hour)); return err }},
		{"wrapped: record failures", func() error { _, err := idemhook.NewWrapped(v, h, idemhook.WithRecordFailures()); return err }},
	}
	for _, tt := range tests {
		if tt.err() == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
}

// TestWaiterRunsWhenFirstFails: a duplicate waiting on a run that fails
// (and releases the ID) runs the delivery itself and answers 200, so the
// sender's concurrent retry is not lost with the first run.
func TestWaiterRunsWhenFirstFails(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	h := newReceiver(t, memstore.New(), func(context.Context, event) error {
		if runs.Add(1) == 1 {
			close(started)
			<-release
			return errors.New("downstream unavailable")
		}
		return nil
	})
	done := make(chan int)
	go func() { done <- serve(h, delivery(swKey, "m1", time.Now(), `{"n":1}`)).Code }()
	<-started
	time.AfterFunc(50*time.Millisecond, func() { close(release) })
	dup := serve(h, delivery(swKey, "m1", time.Now(), `{"n":1}`))
	first := <-done
	if diff := cmp.Diff([]int64{500, 200, 2}, []int64{int64(first), int64(dup.Code), runs.Load()}); diff != "" {
		t.Errorf("first, duplicate, runs (-want +got):\n%s", diff)
	}
}
