package main

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemtest"
	"github.com/idemgen/idemgen/runtime/memstore"
)

const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"

// send posts body as delivery id, signed by the Standard Webhooks
// reference library (the sender's side), through a real HTTP client.
func send(t *testing.T, url, key, id string, ts time.Time, body string) (int, string) {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(key)
	if err != nil {
		t.Fatal(err)
	}
	sig, err := wh.Sign(id, ts, []byte(body))
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, url+"/webhooks/invoices", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set(standardwebhooks.HeaderWebhookID, id)
	req.Header.Set(standardwebhooks.HeaderWebhookTimestamp, strconv.FormatInt(ts.Unix(), 10))
	req.Header.Set(standardwebhooks.HeaderWebhookSignature, sig)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body) //nolint:errcheck
	return resp.StatusCode, resp.Header.Get("Idempotent-Replayed")
}

// TestReceiver: a forged delivery carrying the real ID first (401), the
// real delivery and 20 concurrent retries of it (all 200, one booking), a
// stale replay (400), and a delivery signed with the next secret during a
// rotation.
func TestReceiver(t *testing.T) {
	var logs idemtest.SyncBuffer
	h, err := newHandler(idem.NewGuard(memstore.New()), &Ledger{log: slog.New(slog.NewTextHandler(&logs, nil))},
		secret, "whsec_"+"bmV4dCBzZWNyZXQgYWZ0ZXIgdGhlIHJvdGF0aW9u")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"type":"invoice.paid","data":{"invoice":"in_1001","amount":4200}}`
	now := time.Now()

	if code, _ := send(t, srv.URL, "whsec_"+"Zm9yZ2VkIGJ5IHNvbWVvbmUgZWxzZQ==", "msg_1", now, body); code != http.StatusUnauthorized {
		t.Errorf("forged: %d, want 401", code)
	}
	type answer struct {
		Code     int
		Replayed string
	}
	answers := make([]answer, 21)
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, r := send(t, srv.URL, secret, "msg_1", now, body)
			answers[i] = answer{c, r}
		}()
	}
	wg.Wait()
	fresh := 0
	for _, a := range answers {
		if a.Code != http.StatusOK {
			t.Errorf("delivery answered %d", a.Code)
		}
		if a.Replayed == "" {
			fresh++
		}
	}
	if fresh != 1 {
		t.Errorf("%d deliveries were processed, want 1: %v", fresh, answers)
	}
	if code, _ := send(t, srv.URL, secret, "msg_1", now.Add(-time.Hour), body); code != http.StatusBadRequest {
		t.Errorf("stale replay: %d, want 400", code)
	}
	code, replayed := send(t, srv.URL, "whsec_bmV4dCBzZWNyZXQgYWZ0ZXIgdGhlIHJvdGF0aW9u", "msg_2", now,
		`{"type":"invoice.paid","data":{"invoice":"in_1002","amount":10}}`)
	if diff := cmp.Diff(answer{200, ""}, answer{code, replayed}); diff != "" {
		t.Errorf("rotated secret (-want +got):\n%s", diff)
	}
	if n := strings.Count(logs.String(), "msg=booked"); n != 2 {
		t.Errorf("%d bookings, want 2:\n%s", n, logs.String())
	}
}
