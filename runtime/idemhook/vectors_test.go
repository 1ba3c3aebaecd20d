package idemhook

import (
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// Standard Webhooks' test vector, from the spec repository's Go library
// (libraries/go/webhook_test.go, TestWebhookSign and the defaults above it):
// https://github.com/standard-webhooks/standard-webhooks/blob/main/libraries/go/webhook_test.go
const (
	swSecret  = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	swID      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	swTS      = 1614265330
	swPayload = `{"test": 2432232314}`
	swSig     = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	// swWrongSig is the library's "invalid signature" case.
	swWrongSig = "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="
)

// verdict is what a test expects of Verify: the ID, or the error kind.
type verdict struct {
	ID  string
	Err string // "", "signature", "malformed", "stale"
}

func judge(id string, err error) verdict {
	switch {
	case err == nil:
		return verdict{ID: id}
	case errors.Is(err, ErrSignature):
		return verdict{Err: "signature"}
	case errors.Is(err, ErrMalformed):
		return verdict{Err: "malformed"}
	case errors.Is(err, ErrStale):
		return verdict{Err: "stale"}
	}
	return verdict{Err: "other: " + err.Error()}
}

func fixed(unix int64) func() time.Time { return func() time.Time { return time.Unix(unix, 0) } }

func headers(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestStandardWebhooksVectors(t *testing.T) {
	pub, priv, err := ed25519.GenerateKey(nil)
	if err != nil {
		t.Fatal(err)
	}
	signed := swID + "." + strconv.Itoa(swTS) + "." + swPayload
	edSig := "v1a," + base64.StdEncoding.EncodeToString(ed25519.Sign(priv, []byte(signed)))
	whpk := "whpk_" + base64.StdEncoding.EncodeToString(pub)
	other := "whsec_" + base64.StdEncoding.EncodeToString([]byte("another secret, rotated out"))
	tests := []struct {
		name string
		keys []string
		now  int64
		h    http.Header
		want verdict
	}{
		{"published vector", []string{swSecret}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{ID: swID}},
		{"secret without prefix", []string{swSecret[len("whsec_"):]}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{ID: swID}},
		{"rotation: second secret", []string{other, swSecret}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{ID: swID}},
		{"several signatures, one good", []string{swSecret}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swWrongSig+" v2,xyz "+swSig), verdict{ID: swID}},
		{"library's invalid signature", []string{swSecret}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swWrongSig), verdict{Err: "signature"}},
		{"empty signature", []string{swSecret}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", "v1,"), verdict{Err: "signature"}},
		{"only the rotated-out secret", []string{other}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{Err: "signature"}},
		{"another id, same signature", []string{swSecret}, swTS, headers("webhook-id", "msg_other", "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{Err: "signature"}},
		{"v1a Ed25519", []string{whpk}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", edSig), verdict{ID: swID}},
		{"v1a next to a bad v1", []string{swSecret, whpk}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swWrongSig+" "+edSig), verdict{ID: swID}},
		{"v1a signature as v1", []string{swSecret, whpk}, swTS, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", "v1,"+edSig[4:]), verdict{Err: "signature"}},
		{"too old", []string{swSecret}, swTS + 301, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{Err: "stale"}},
		{"too new", []string{swSecret}, swTS - 301, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{Err: "stale"}},
		{"edge of the window", []string{swSecret}, swTS + 300, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{ID: swID}},
		{"forged and stale is a forgery", []string{swSecret}, swTS + 1000, headers("webhook-id", swID, "webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swWrongSig), verdict{Err: "signature"}},
		{"no id", []string{swSecret}, swTS, headers("webhook-timestamp", strconv.Itoa(swTS), "webhook-signature", swSig), verdict{Err: "malformed"}},
		{"timestamp not a number", []string{swSecret}, swTS, headers("webhook-id", swID, "webhook-timestamp", "1614265330.0", "webhook-signature", swSig), verdict{Err: "malformed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, err := NewStandardWebhooks(tt.keys...)
			if err != nil {
				t.Fatal(err)
			}
			v.Now = fixed(tt.now)
			if diff := cmp.Diff(tt.want, judge(v.Verify(tt.h, []byte(swPayload)))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	for _, bad := range []string{"whsec_!!!", "whpk_" + base64.StdEncoding.EncodeToString([]byte("short")), "whsec_"} {
		if _, err := NewStandardWebhooks(bad); err == nil {
			t.Errorf("NewStandardWebhooks(%q): no error", bad)
		}
	}
	if _, err := NewStandardWebhooks(); err == nil {
		t.Error("NewStandardWebhooks(): no error")
	}
}

// GitHub's worked example, from "Validating webhook deliveries":
// https://docs.github.com/en/webhooks/using-webhooks/validating-webhook-deliveries
// (secret "It's a Secret to Everybody", payload "Hello, World!").
func TestGitHubVector(t *testing.T) {
	const sig = "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
	const id = "72d3162e-cc78-11e3-81ab-4c9367dc0958"
	tests := []struct {
		name    string
		secrets []string
		h       http.Header
		body    string
		want    verdict
	}{
		{"published vector", []string{"It's a Secret to Everybody"}, headers("X-Hub-Signature-256", sig, "X-GitHub-Delivery", id), "Hello, World!", verdict{ID: id}},
		{"rotation", []string{"old", "It's a Secret to Everybody"}, headers("X-Hub-Signature-256", sig, "X-GitHub-Delivery", id), "Hello, World!", verdict{ID: id}},
		{"body changed", []string{"It's a Secret to Everybody"}, headers("X-Hub-Signature-256", sig, "X-GitHub-Delivery", id), "Hello, World?", verdict{Err: "signature"}},
		{"wrong secret", []string{"It's a secret to everybody"}, headers("X-Hub-Signature-256", sig, "X-GitHub-Delivery", id), "Hello, World!", verdict{Err: "signature"}},
		{"no secret refuses all", nil, headers("X-Hub-Signature-256", sig, "X-GitHub-Delivery", id), "Hello, World!", verdict{Err: "signature"}},
		{"sha1 header only", []string{"It's a Secret to Everybody"}, headers("X-Hub-Signature", "sha1=00", "X-GitHub-Delivery", id), "Hello, World!", verdict{Err: "malformed"}},
		{"no delivery ID", []string{"It's a Secret to Everybody"}, headers("X-Hub-Signature-256", sig), "Hello, World!", verdict{Err: "malformed"}},
		{"not hex", []string{"It's a Secret to Everybody"}, headers("X-Hub-Signature-256", "sha256=zz", "X-GitHub-Delivery", id), "Hello, World!", verdict{Err: "signature"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, judge(NewGitHub(tt.secrets...).Verify(tt.h, []byte(tt.body)))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// Slack's example, from "Verifying requests from Slack":
// https://api.slack.com/authentication/verifying-requests-from-slack
// (a slash command's form body; it carries no event_id, so the signature
// check is tested on its own, and Verify on an Events API payload signed
// the same way).
func TestSlackVector(t *testing.T) {
	const (
		secret = "8f742231b10e8888abcd99yyyzzz85a5"
		ts     = "1531420618"
		body   = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c"
		sig    = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"
	)
	v := NewSlack(secret)
	v.Now = fixed(1531420618)
	tests := []struct {
		name string
		h    http.Header
		body string
		want error
	}{
		{"published vector", headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts), body, nil},
		{"body changed", headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts), body + "x", ErrSignature},
		{"timestamp changed", headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", "1531420619"), body, ErrSignature},
		{"timestamp re-printed", headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", "01531420618"), body, ErrSignature},
		{"no v0=", headers("X-Slack-Signature", sig[3:], "X-Slack-Request-Timestamp", ts), body, ErrMalformed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := v.signed(tt.h, []byte(tt.body)); !errors.Is(err, tt.want) || (err == nil) != (tt.want == nil) {
				t.Errorf("signed: %v, want %v", err, tt.want)
			}
		})
	}
	stale := NewSlack(secret)
	stale.Now = fixed(1531420618 + 301)
	if err := stale.signed(headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts), []byte(body)); !errors.Is(err, ErrStale) {
		t.Errorf("stale: %v", err)
	}
	// The vector's slash command has no event_id: refused as malformed.
	if got := judge(v.Verify(headers("X-Slack-Signature", sig, "X-Slack-Request-Timestamp", ts), []byte(body))); got.Err != "malformed" {
		t.Errorf("slash command: %+v", got)
	}
	ev := `{"type":"event_callback","event_id":"Ev08MFMKH6","event":{"type":"app_mention"}}`
	h := headers("X-Slack-Signature", "v0="+hexMAC(secret, "v0:"+ts+":"+ev), "X-Slack-Request-Timestamp", ts)
	if diff := cmp.Diff(verdict{ID: "Ev08MFMKH6"}, judge(v.Verify(h, []byte(ev)))); diff != "" {
		t.Errorf("event (-want +got):\n%s", diff)
	}
}

func hexMAC(secret, msg string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(msg))
	return hex.EncodeToString(m.Sum(nil))
}

// Stripe publishes no test vector; its libraries sign test payloads with
// the scheme its docs state (https://docs.stripe.com/webhooks#verify-manually):
// HMAC-SHA256, hex, of "t.payload" under the endpoint secret. The vector
// below is computed independently (openssl dgst -sha256 -hmac).
func TestStripeVerify(t *testing.T) {
	const (
		secret = "whsec_test_secret"
		ts     = "1700000000"
		body   = `{"id":"evt_1","object":"event","type":"payment_intent.succeeded"}`
		// printf '%s' '1700000000.{"id":"evt_1",...}' | openssl dgst -sha256 -hmac whsec_test_secret
		sig = "67da5088c63e080c71bd2bb0cb5c03d85a8fc6a21ce3aaf484df809654745b92"
	)
	tests := []struct {
		name    string
		secrets []string
		now     int64
		hdr     string
		body    string
		want    verdict
	}{
		{"vector", []string{secret}, 1700000000, "t=" + ts + ",v1=" + sig, body, verdict{ID: "evt_1"}},
		{"v0 and a second v1 (rolling secret)", []string{secret}, 1700000000, "t=" + ts + ",v1=" + hexMAC("old", ts+"."+body) + ",v1=" + sig + ",v0=abc", body, verdict{ID: "evt_1"}},
		{"rotation", []string{"whsec_new", secret}, 1700000000, "t=" + ts + ",v1=" + sig, body, verdict{ID: "evt_1"}},
		{"wrong signature", []string{secret}, 1700000000, "t=" + ts + ",v1=" + hexMAC("x", ts+"."+body), body, verdict{Err: "signature"}},
		{"timestamp changed", []string{secret}, 1700000000, "t=1700000001,v1=" + sig, body, verdict{Err: "signature"}},
		{"stale", []string{secret}, 1700000000 + 301, "t=" + ts + ",v1=" + sig, body, verdict{Err: "stale"}},
		{"no t", []string{secret}, 1700000000, "v1=" + sig, body, verdict{Err: "malformed"}},
		{"no v1", []string{secret}, 1700000000, "t=" + ts + ",v0=" + sig, body, verdict{Err: "malformed"}},
		{"signed payload without id", []string{secret}, 1700000000, "t=" + ts + ",v1=" + hexMAC(secret, ts+`.{"object":"event"}`), `{"object":"event"}`, verdict{Err: "malformed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := NewStripe(tt.secrets...)
			v.Now = fixed(tt.now)
			got := judge(v.Verify(headers("Stripe-Signature", tt.hdr), []byte(tt.body)))
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
