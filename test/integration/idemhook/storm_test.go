package idemhook_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/internal/testenv"
	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemhook"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/test/internal/storeopen"
)

// records lists every record in the store's key space.
func records(t *testing.T, s idemstore.Store) []string {
	t.Helper()
	a, ok := s.(idemstore.Admin)
	if !ok {
		t.Fatalf("%T is not an idemstore.Admin", s)
	}
	var keys []string
	if err := a.List(context.Background(), "", func(r idemstore.Record) error {
		keys = append(keys, r.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return keys
}

func hexMAC(key []byte, parts ...string) string {
	m := hmac.New(sha256.New, key)
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

// provider signs deliveries the way one sender does.
type provider struct {
	name     string
	verifier func(secret []byte) idemhook.Verifier
	// sign returns the delivery of event id, signed with key at ts.
	sign  func(key []byte, id string, ts time.Time) *http.Request
	stamp bool // the scheme signs a timestamp (stale replays are refused)
}

func post(body string) *http.Request {
	return httptest.NewRequest(http.MethodPost, "/hooks", strings.NewReader(body))
}

var providers = []provider{
	{
		name: "standard-webhooks",
		verifier: func(secret []byte) idemhook.Verifier {
			v, err := idemhook.NewStandardWebhooks("whsec_" + base64.StdEncoding.EncodeToString(secret))
			if err != nil {
				panic(err)
			}
			return v
		},
		sign: func(key []byte, id string, ts time.Time) *http.Request {
			body := `{"type":"invoice.paid","data":{"invoice":"in_1"}}`
			m := hmac.New(sha256.New, key)
			fmt.Fprintf(m, "%s.%d.%s", id, ts.Unix(), body)
			r := post(body)
			r.Header.Set("webhook-id", id)
			r.Header.Set("webhook-timestamp", strconv.FormatInt(ts.Unix(), 10))
			r.Header.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(m.Sum(nil)))
			return r
		},
		stamp: true,
	},
	{
		name:     "stripe",
		verifier: func(secret []byte) idemhook.Verifier { return idemhook.NewStripe(string(secret)) },
		sign: func(key []byte, id string, ts time.Time) *http.Request {
			body := `{"id":"` + id + `","object":"event","type":"payment_intent.succeeded"}`
			t := strconv.FormatInt(ts.Unix(), 10)
			r := post(body)
			r.Header.Set("Stripe-Signature", "t="+t+",v1="+hexMAC(key, t, ".", body))
			return r
		},
		stamp: true,
	},
	{
		name:     "github",
		verifier: func(secret []byte) idemhook.Verifier { return idemhook.NewGitHub(string(secret)) },
		sign: func(key []byte, id string, _ time.Time) *http.Request {
			body := `{"action":"opened","number":1}`
			r := post(body)
			r.Header.Set("X-GitHub-Delivery", id)
			r.Header.Set("X-Hub-Signature-256", "sha256="+hexMAC(key, body))
			return r
		},
	},
	{
		name:     "slack",
		verifier: func(secret []byte) idemhook.Verifier { return idemhook.NewSlack(string(secret)) },
		sign: func(key []byte, id string, ts time.Time) *http.Request {
			body := `{"type":"event_callback","event_id":"` + id + `","event":{"type":"app_mention"}}`
			t := strconv.FormatInt(ts.Unix(), 10)
			r := post(body)
			r.Header.Set("X-Slack-Request-Timestamp", t)
			r.Header.Set("X-Slack-Signature", "v0="+hexMAC(key, "v0:", t, ":", body))
			return r
		},
		stamp: true,
	},
}

// TestStorm, per verifier and store: forged copies of a real delivery's
// ID (a bad signature) sent before it, then the real delivery replayed 500
// times concurrently across four receiver instances (own Guard, own store
// client) with forged copies and stale replays mixed in. The handler runs
// exactly once; every forged copy is 401 and every stale replay 400, and
// neither leaves a record: the store holds the one real delivery's.
func TestStorm(t *testing.T) {
	const replays, forgeries, stale, instances = 500, 100, 50, 4
	secret, wrong := []byte("the endpoint's signing secret!!"), []byte("an attacker's guess at a secret")
	for _, kind := range storeopen.Kinds {
		for _, p := range providers {
			t.Run(kind+"/"+p.name, func(t *testing.T) {
				open := storeopen.Open(t, kind, "idemhook_storm")
				var runs atomic.Int64
				handle := func(ctx context.Context, _ map[string]any) error {
					runs.Add(1)
					time.Sleep(20 * time.Millisecond) // duplicates arrive while it runs
					return nil
				}
				var hs []http.Handler
				var stores []idemstore.Store
				for range instances {
					s := open()
					rc, err := idemhook.New(idem.NewGuard(s), p.verifier(secret), handle,
						idemhook.WithName("storm."+p.name), idemhook.WithInProgress(10*time.Second, false))
					if err != nil {
						t.Fatal(err)
					}
					hs, stores = append(hs, rc), append(stores, s)
				}
				id := "evt_" + testenv.RandName()

				// Before: forged copies with the real ID, and forged
				// deliveries of IDs never sent. Nothing may be recorded.
				for i := range forgeries {
					fid := id
					if i%2 == 1 {
						fid = id + "-" + strconv.Itoa(i)
					}
					if w := serve(hs[i%instances], p.sign(wrong, fid, time.Now())); w.Code != http.StatusUnauthorized {
						t.Fatalf("forged before: %d %s", w.Code, w.Body)
					}
				}
				if keys := records(t, stores[0]); len(keys) != 0 {
					t.Fatalf("forged deliveries left records: %q", keys)
				}

				// During: the real delivery's replays, forged copies and
				// stale replays at once.
				type kindCode struct {
					Kind string
					Code int
				}
				var mu sync.Mutex
				got := map[kindCode]int{}
				var wg sync.WaitGroup
				send := func(kind string, h http.Handler, r *http.Request) {
					defer wg.Done()
					w := serve(h, r)
					mu.Lock()
					got[kindCode{kind, w.Code}]++
					mu.Unlock()
				}
				start := make(chan struct{})
				for i := range replays + forgeries + stale {
					var r *http.Request
					kind := "real"
					switch {
					case i%6 == 1 && i/6 < forgeries:
						kind, r = "forged", p.sign(wrong, id, time.Now())
					case i%6 == 4 && i/6 < stale && p.stamp:
						kind, r = "stale", p.sign(secret, id, time.Now().Add(-10*time.Minute))
					default:
						r = p.sign(secret, id, time.Now())
					}
					wg.Add(1)
					go func(h http.Handler) {
						<-start
						send(kind, h, r)
					}(hs[i%instances])
				}
				close(start)
				wg.Wait()

				if n := runs.Load(); n != 1 {
					t.Errorf("the handler ran %d times, want 1", n)
				}
				for kc, n := range got {
					want := map[string]int{"real": http.StatusOK, "forged": http.StatusUnauthorized, "stale": http.StatusBadRequest}[kc.Kind]
					if kc.Code != want {
						t.Errorf("%d %s deliveries answered %d, want %d", n, kc.Kind, kc.Code, want)
					}
				}
				keys := records(t, stores[0])
				if len(keys) != 1 {
					t.Errorf("records after the storm: %q, want the real delivery's alone", keys)
				}
				// After: a replay is a duplicate, answered 200 at once.
				w := serve(hs[0], p.sign(secret, id, time.Now()))
				if diff := cmp.Diff([]string{"200", "true"}, []string{strconv.Itoa(w.Code), w.Header().Get(idemhook.ReplayHeader)}); diff != "" {
					t.Errorf("replay after the storm (-want +got):\n%s", diff)
				}
			})
		}
	}
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}
