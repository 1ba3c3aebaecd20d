package idemtest

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemstore"
)

// sealCases run a Guard that seals its records (idem.WithSealer) over the
// store: what the store keeps holds no plaintext, replays open it, and a
// sealed record planted at another key fails closed.
var sealCases = []suiteCase{
	{"SealedRecordsHoldNoPlaintext", testSealedNoPlaintext},
	{"SealedRecordsFailClosed", testSealedFailsClosed},
}

const sealMarker = "idemtest-secret-4242"

func (e *env) sealedGuard(t *testing.T) *idem.Guard {
	t.Helper()
	ring, err := idemseal.New(idemseal.Key{ID: "t1", Secret: bytes.Repeat([]byte{7}, 32)})
	if err != nil {
		t.Fatal(err)
	}
	return idem.NewGuard(e.s, idem.WithSealer(ring))
}

// sealedCall runs a call whose result (and, where the store keeps steps,
// a step's) holds sealMarker.
func (e *env) sealedCall(g *idem.Guard, spec *idem.Spec, id string, runs *int) (any, error) {
	return e.guardCall(ctx, g, spec, id, func(ctx context.Context) (any, error) {
		*runs++
		out := "receipt " + sealMarker
		if _, ok := e.s.(idemstore.Stepper); ok {
			v, err := idem.Step(ctx, "card", func(context.Context) (string, error) { return "card " + sealMarker, nil })
			if err != nil {
				return nil, err
			}
			out += " " + v
		}
		return out, nil
	})
}

func testSealedNoPlaintext(t *testing.T, e *env) {
	g := e.sealedGuard(t)
	spec := e.spec("sealed")
	runs := 0
	first, err := e.sealedCall(g, spec, "a", &runs)
	if err != nil {
		t.Fatal(err)
	}
	again, err := e.sealedCall(g, spec, "a", &runs)
	if err != nil || again != first || runs != 1 {
		t.Fatalf("replay = %v, %v after %d runs; want %v after 1", again, err, runs, first)
	}
	c, k := idemimpl.Begin(g, spec)
	k.Key().String(e.key)
	k.Key().String("a")
	key, _ := c.StoreKey()
	rec := e.get(key)
	if len(rec.Result) == 0 || bytes.Contains(rec.Result, []byte(sealMarker)) {
		t.Errorf("the stored result (%d bytes) is empty or holds the marker in the clear", len(rec.Result))
	}
	for name, data := range rec.Steps {
		if bytes.Contains(data, []byte(sealMarker)) {
			t.Errorf("step %s is stored in the clear", name)
		}
	}
	if e.raw == nil {
		t.Logf("%T: no Harness.Raw, the store's raw values not read", e.s)
		return
	}
	holds := func(marker string) bool {
		clear := []byte(marker)
		hexed := []byte(hex.EncodeToString(clear))
		for _, v := range e.raw(t, e.s) {
			if bytes.Contains(v, clear) || bytes.Contains(bytes.ToLower(v), hexed) {
				return true
			}
		}
		return false
	}
	if holds(sealMarker) {
		t.Error("a raw value of the store holds the sealed result's marker in the clear")
	}
	// The reader's own check: an unsealed result's marker is found.
	const plain = "idemtest-plain-7373"
	if _, err := e.guardCall(ctx, idem.NewGuard(e.s), e.spec("unsealed"), "p", func(context.Context) (any, error) { return plain, nil }); err != nil {
		t.Fatal(err)
	}
	if !holds(plain) {
		t.Error("Harness.Raw does not find an unsealed result's marker: it reads nothing useful")
	}
}

// testSealedFailsClosed plants sealed bytes where they do not belong, or reads
// them with a keyring that does not open them: ErrCorruptRecord, and the
// function does not run. A rotated keyring still opens them.
func testSealedFailsClosed(t *testing.T, e *env) {
	k1 := idemseal.Key{ID: "t1", Secret: bytes.Repeat([]byte{7}, 32)}
	k2 := idemseal.Key{ID: "t2", Secret: bytes.Repeat([]byte{8}, 32)}
	ringOf := func(keys ...idemseal.Key) *idem.Guard {
		r, err := idemseal.New(keys[0], keys[1:]...)
		if err != nil {
			t.Fatal(err)
		}
		return idem.NewGuard(e.s, idem.WithSealer(r))
	}
	g := ringOf(k1)
	spec := e.spec("sealed")
	runs := 0
	if _, err := e.sealedCall(g, spec, "a", &runs); err != nil {
		t.Fatal(err)
	}
	keyOf := func(id string) string {
		c, k := idemimpl.Begin(g, spec)
		k.Key().String(e.key)
		k.Key().String(id)
		key, _ := c.StoreKey()
		return key
	}
	src := e.get(keyOf("a")).Result
	// Plant bytes as the completed record of id, under id's own
	// fingerprint (a probe Guard's claim of id gives it).
	plant := func(id string, data []byte) {
		probe := idem.NewGuard(e.s)
		if _, err := e.guardCall(ctx, probe, e.spec("probe"), id, func(context.Context) (any, error) { return nil, nil }); err != nil {
			t.Fatal(err)
		}
		pc, k := idemimpl.Begin(probe, e.spec("probe"))
		k.Key().String(e.key)
		k.Key().String(id)
		pk, _ := pc.StoreKey()
		l, res := e.claim(keyOf(id), e.get(pk).Fingerprint)
		if !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
			t.Fatalf("planting %s: claim %v", id, res.Status)
		}
		if err := e.s.Complete(ctx, l, idemstore.Result{Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	plant("moved", src)
	plant("truncated", src[:len(src)-5])
	for _, tc := range []struct {
		name, id string
		reader   *idem.Guard
		opens    bool
	}{
		{"moved to another key", "moved", g, false},
		{"truncated", "truncated", g, false},
		{"read with another key", "a", ringOf(k2), false},
		{"read with a rotated keyring", "a", ringOf(k2, k1), true},
	} {
		before := runs
		_, err := e.sealedCall(tc.reader, spec, tc.id, &runs)
		if tc.opens && err != nil {
			t.Errorf("%s: %v, want the replay", tc.name, err)
		}
		if !tc.opens && !errors.Is(err, idem.ErrCorruptRecord) {
			t.Errorf("%s: %v, want ErrCorruptRecord", tc.name, err)
		}
		if runs != before {
			t.Errorf("%s: the function ran: a record that does not open fails closed", tc.name)
		}
	}
}
