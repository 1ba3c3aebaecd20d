package idemtest

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
)

// sealCases run a Guard that seals its records (idem.WithSealer) over the
// store: what the store keeps holds no plaintext, replays open it, and a
// sealed record planted at another key fails closed.
var sealCases = []suiteCase{
	{"SealedRecordsHoldNoPlaintext", testSealedNoPlaintext},
	{"SealedRecordMovedFailsClosed", testSealedMoved},
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
		if _, ok := e.s.(idem.Stepper); ok {
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
	c := g.Begin(spec)
	c.Key().String(e.key)
	c.Key().String("a")
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
}

func testSealedMoved(t *testing.T, e *env) {
	g := e.sealedGuard(t)
	spec := e.spec("sealed")
	runs := 0
	if _, err := e.sealedCall(g, spec, "a", &runs); err != nil {
		t.Fatal(err)
	}
	keyOf := func(id string) string {
		c := g.Begin(spec)
		c.Key().String(e.key)
		c.Key().String(id)
		k, _ := c.StoreKey()
		return k
	}
	src := e.get(keyOf("a"))
	// Plant a's sealed bytes as the completed record of b, under b's own
	// fingerprint (the one the Guard claims b with: a's record gives the
	// form, a probe claim of b through the Guard would run it).
	probe := idem.NewGuard(e.s)
	if _, err := e.guardCall(ctx, probe, e.spec("probe"), "b", func(context.Context) (any, error) { return nil, nil }); err != nil {
		t.Fatal(err)
	}
	pc := probe.Begin(e.spec("probe"))
	pc.Key().String(e.key)
	pc.Key().String("b")
	pk, _ := pc.StoreKey()
	fp := e.get(pk).Fingerprint
	dst := keyOf("b")
	l, res := e.claim(dst, fp)
	if !res.Status.Owns() {
		t.Fatalf("planting b: claim %v", res.Status)
	}
	if err := e.s.Complete(ctx, l, idem.Result{Data: src.Result}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.sealedCall(g, spec, "b", &runs); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("a's sealed record at b's key: %v, want ErrCorruptRecord", err)
	}
	if runs != 1 {
		t.Errorf("ran %d times, want 1: a record that does not open fails closed", runs)
	}
}
