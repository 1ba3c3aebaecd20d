package webhookhandler

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idemhook"
)

const secret = "whsec_test"

// delivery is a Stripe-signed POST of body (a wrong secret forges it).
func delivery(t *testing.T, url, key, body string) int {
	t.Helper()
	ts := strconv.FormatInt(time.Now().Unix(), 10)
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts + "." + body))
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Stripe-Signature", fmt.Sprintf("t=%s,v1=%s", ts, hex.EncodeToString(mac.Sum(nil))))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// The generated wrapper is the endpoint's handler: a forged delivery
// carrying the real event's ID is refused before the wrapper claims it,
// the real one and its concurrent retries book once, and the same event
// from a queue consumer's loop is a replay.
func TestWebhookAndConsumerShareTheAnnotation(t *testing.T) {
	api := NewIdempotent(newGuard(t))
	rc, err := idemhook.NewWrapped(idemhook.NewStripe(secret), api.Book)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	body := `{"id":"evt_1","amount":4200}`

	before := booked.Load()
	// Forged: the real event's ID, another amount. Claimed before it was
	// verified, it would run, and the real deliveries would be refused as
	// a reuse of the ID with another payload (422).
	forged := delivery(t, srv.URL, "whsec_forged", `{"id":"evt_1","amount":1}`)
	var mu sync.Mutex
	var wg sync.WaitGroup
	real := map[int]int{}
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code := delivery(t, srv.URL, secret, body)
			mu.Lock()
			real[code]++
			mu.Unlock()
		}()
	}
	wg.Wait()
	// Duplicates of a running delivery may be answered 409
	// (on_duplicate=return, the default: ErrInProgress), and the rest 200.
	type answers struct{ Forged, Real int }
	got := answers{forged, real[http.StatusOK] + real[http.StatusConflict]}
	if diff := cmp.Diff(answers{http.StatusUnauthorized, 20}, got); diff != "" || real[http.StatusOK] == 0 {
		t.Errorf("answers (-want +got):\n%s\nreal deliveries by status: %v", diff, real)
	}
	if err := api.Book(context.Background(), InvoicePaid{ID: "evt_1", Amount: 4200}); err != nil {
		t.Fatalf("the consumer's delivery: %v", err)
	}
	if n := booked.Load() - before; n != 1 {
		t.Errorf("booked %d times, want 1", n)
	}
}

// A handler that is not a wrapper would run every delivery: refused with
// 500 rather than answered as deduplicated.
func TestNotAWrapperIsRefused(t *testing.T) {
	rc, err := idemhook.NewWrapped(idemhook.NewStripe(secret), Book)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(rc)
	defer srv.Close()
	if code := delivery(t, srv.URL, secret, `{"id":"evt_2","amount":1}`); code != http.StatusInternalServerError {
		t.Errorf("answer %d, want 500", code)
	}
}
