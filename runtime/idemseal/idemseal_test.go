package idemseal_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemseal"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

func key(id string, b byte) idemseal.Key {
	return idemseal.Key{ID: id, Secret: bytes.Repeat([]byte{b}, 32)}
}

func ring(t *testing.T, keys ...idemseal.Key) *idemseal.Keyring {
	t.Helper()
	r, err := idemseal.New(keys[0], keys[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// bytesOnly is the memory store answering with stored bytes alone, as the
// networked stores do, so every replay opens the sealed record.
type bytesOnly struct{ *memstore.Store }

func (s bytesOnly) Claim(ctx context.Context, req idemstore.ClaimRequest) (idemstore.ClaimResult, error) {
	res, err := s.Store.Claim(ctx, req)
	res.Result.Value = nil
	return res, err
}

const marker = "4242-4242-4242-4242"

var spec = &idem.Spec{Name: "seal.Charge", OnFailure: idem.FailureLock}

// call runs a charge for id through g; fail makes it fail (recorded).
func call(g *idem.Guard, id string, runs *int, fail bool) (string, error) {
	c := g.Begin(spec, id)
	return idem.Do(context.Background(), c, func(ctx context.Context) (string, error) {
		*runs++
		card, err := idem.Step(ctx, "card", func(context.Context) (string, error) { return "card " + marker, nil })
		if fail {
			return "", errors.New("declined " + marker)
		}
		return "receipt for " + card, err
	})
}

func storeKey(t *testing.T, g *idem.Guard, id string) string {
	t.Helper()
	c := g.Begin(spec, id)
	key, err := c.StoreKey()
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// Results, recorded failures and steps are stored sealed: no plaintext of
// the marker anywhere in the record, and replays open them.
func TestSealedRecords(t *testing.T) {
	st := memstore.New()
	g := idem.NewGuard(bytesOnly{st}, idem.WithSealer(ring(t, key("k1", 1))))
	runs := 0
	for _, tc := range []struct {
		id   string
		fail bool
	}{{"ok", false}, {"declined", true}} {
		first, ferr := call(g, tc.id, &runs, tc.fail)
		again, aerr := call(g, tc.id, &runs, tc.fail)
		var recorded *idem.RecordedError
		if first != again || (tc.fail && (!errors.As(aerr, &recorded) || recorded.Message != ferr.Error())) || (!tc.fail && aerr != nil) {
			t.Errorf("%s: replay %q, %v; first %q, %v", tc.id, again, aerr, first, ferr)
		}
		rec, err := st.Get(context.Background(), storeKey(t, g, tc.id))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(rec.Result, []byte(marker)) {
			t.Errorf("%s: the stored record holds the marker in the clear", tc.id)
		}
		for name, data := range rec.Steps {
			if bytes.Contains(data, []byte(marker)) {
				t.Errorf("%s: step %s holds the marker in the clear", tc.id, name)
			}
		}
	}
	if runs != 2 {
		t.Errorf("ran %d times, want 2", runs)
	}
}

// A record sealed with a key the Guard does not hold, truncated, moved to
// another key, in the clear where the Guard seals, or sealed where it does
// not is ErrCorruptRecord, and nothing runs. A rotated keyring still
// opens what its older key sealed.
func TestSealFailsClosed(t *testing.T) {
	ctx := context.Background()
	k1, k2 := key("k1", 1), key("k2", 2)
	plantCopy := func(st *memstore.Store, g *idem.Guard, from, to string, change func([]byte) []byte) {
		src, err := st.Get(ctx, storeKey(t, g, from))
		if err != nil {
			t.Fatal(err)
		}
		dst := storeKey(t, g, to)
		res, err := st.Claim(ctx, idemstore.ClaimRequest{Key: dst, Fingerprint: fingerprintOf(t, st, g, to), Owner: idemstore.Token{9}, Lease: 1e9, TTL: 1e12})
		if err != nil || !(res.Status == idemstore.ClaimAcquired || res.Status == idemstore.ClaimTakenOver) {
			t.Fatalf("planting %s: %v %v", to, res.Status, err)
		}
		l := idemstore.Lease{Key: dst, Owner: idemstore.Token{9}, Fence: res.Fence, Duration: 1e9, TTL: 1e12}
		if err := st.Complete(ctx, l, idemstore.Result{Data: change(bytes.Clone(src.Result))}); err != nil {
			t.Fatal(err)
		}
	}
	sealK1, sealK2 := []idem.Option{idem.WithSealer(ring(t, k1))}, []idem.Option{idem.WithSealer(ring(t, k2))}
	tests := []struct {
		name   string
		writer []idem.Option // the Guard that writes the record of "a"
		reader []idem.Option // the Guard that reads "a", then the copy planted at "b"
		change func([]byte) []byte
		opensA bool // the reader opens a's record
		opensB bool // the reader opens the copy at b
	}{
		{"same key", sealK1, sealK1, nil, true, false},
		{"rotated ring opens the old key", sealK1, []idem.Option{idem.WithSealer(ring(t, k2, k1))}, nil, true, false},
		{"unknown key", sealK1, sealK2, nil, false, false},
		{"truncated", sealK1, sealK1, func(b []byte) []byte { return b[:len(b)-3] }, true, false},
		{"clear where the Guard seals", nil, sealK1, nil, false, false},
		{"sealed where the Guard does not", sealK1, nil, nil, false, false},
		{"compressed, read without compression", []idem.Option{idem.WithCompression(1)}, nil, nil, true, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := memstore.New()
			w := idem.NewGuard(bytesOnly{st}, tt.writer...)
			r := idem.NewGuard(bytesOnly{st}, tt.reader...)
			runs := 0
			if _, err := call(w, "a", &runs, false); err != nil {
				t.Fatal(err)
			}
			// The record of "a" read at its own key, then moved to "b".
			_, err := call(r, "a", &runs, false)
			if tt.opensA != (err == nil) || (err != nil && !errors.Is(err, idem.ErrCorruptRecord)) {
				t.Errorf("reading a: %v, want opened=%v (else ErrCorruptRecord)", err, tt.opensA)
			}
			change := tt.change
			if change == nil {
				change = func(b []byte) []byte { return b }
			}
			plantCopy(st, w, "a", "b", change)
			_, err = call(r, "b", &runs, false)
			if tt.opensB != (err == nil) || (err != nil && !errors.Is(err, idem.ErrCorruptRecord)) {
				t.Errorf("the record moved to b: %v, want opened=%v (else ErrCorruptRecord)", err, tt.opensB)
			}
			if runs != 1 {
				t.Errorf("ran %d times, want 1 (a corrupt record fails closed)", runs)
			}
		})
	}
}

// fingerprintOf is the fingerprint the Guard claims id's key with.
func fingerprintOf(t *testing.T, st *memstore.Store, g *idem.Guard, id string) idemstore.Fingerprint {
	t.Helper()
	probe := memstore.New()
	pg := idem.NewGuard(probe)
	runs := 0
	if _, err := call(pg, id, &runs, false); err != nil {
		t.Fatal(err)
	}
	rec, err := probe.Get(context.Background(), storeKey(t, pg, id))
	if err != nil {
		t.Fatal(err)
	}
	return rec.Fingerprint
}

// line is an invoice line, the element of the realistic JSON results.
type line struct {
	SKU, Name string
	Qty       int
	Cents     int64
}

// invoiceLines is a realistic invoice of n lines: 270 make about 20 KB of
// JSON.
func invoiceLines(n int) []line {
	var lines []line
	for i := range n {
		lines = append(lines, line{fmt.Sprintf("SKU-%05d", i), "Widget, blue, large " + strings.Repeat("x", i%7), i % 5, int64(i * 199)})
	}
	return lines
}

// Compression shrinks a realistic 20 KB JSON result, below the seal
// too, and the result replays unchanged.
func TestCompression(t *testing.T) {
	ctx := context.Background()
	lines := invoiceLines(270)
	for _, opts := range [][]idem.Option{
		{idem.WithCompression(1024)},
		{idem.WithCompression(1024), idem.WithSealer(ring(t, key("k1", 1)))},
	} {
		st := memstore.New()
		g := idem.NewGuard(bytesOnly{st}, opts...)
		s := &idem.Spec{Name: "seal.Order"}
		do := func() ([]line, error) {
			c := g.Begin(s, "o1")
			return idem.Do(ctx, c, func(context.Context) ([]line, error) { return lines, nil })
		}
		if _, err := do(); err != nil {
			t.Fatal(err)
		}
		got, err := do()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(lines, got); diff != "" {
			t.Errorf("replay (-want +got):\n%s", diff)
		}
		c := g.Begin(s, "o1")
		key, _ := c.StoreKey()
		rec, _ := st.Get(ctx, key)
		plain, _ := json.Marshal(lines)
		t.Logf("%d options: %d bytes stored for %d bytes of JSON (%.1f%%)", len(opts), len(rec.Result), len(plain), 100*float64(len(rec.Result))/float64(len(plain)))
		if len(rec.Result) > len(plain)/3 {
			t.Errorf("stored %d bytes, want under a third of %d", len(rec.Result), len(plain))
		}
	}
}

func TestParse(t *testing.T) {
	b64 := func(b byte) string { return base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{b}, 32)) }
	r, err := idemseal.Parse(" new:" + b64(2) + ",old:" + b64(1) + "\n")
	if err != nil {
		t.Fatal(err)
	}
	old := ring(t, key("old", 1))
	sealed, err := old.Seal([]byte("x"), []byte("ad"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := r.Open(sealed, []byte("ad")); err != nil || string(got) != "x" {
		t.Errorf("the parsed ring opens the old key's record: %q, %v", got, err)
	}
	for _, bad := range []string{"", "nokey", "a:" + b64(1)[:10], "a:" + b64(1) + ",a:" + b64(2), "a,b:" + b64(1)} {
		if _, err := idemseal.Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
	if _, err := ring(t, key("k2", 2)).Open(sealed, []byte("ad")); !errors.Is(err, idemseal.ErrUnknownKey) {
		t.Errorf("another ring: %v, want ErrUnknownKey", err)
	}
}
