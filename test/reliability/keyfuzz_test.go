package reliability

import (
	"errors"
	"math"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// keyInput is a fixed parameter list, as generated code sees one: its
// shape is fixed by the types, its values vary. It covers every kind of
// value the key builder writes, including the markers (nil vs empty, nil
// pointer), a map (order-independent) and a Keyer whose values are
// variable in number and type (tagged inside Open/Close).
type keyInput struct {
	A   string
	B   int64
	C   uint64
	D   float64
	E   []byte // nil and empty differ
	F   *string
	G   []string // nil and empty differ
	H   map[string]int64
	T   time.Time
	I   bool
	K   tagged
	Cx  complex128
	Raw []byte // goes through Marshaled
}

// tagged is a Keyer writing a variable list of values of varying types.
type tagged []any

func (k tagged) IdemKey() any { return []any(k) }

// write is what generated code would write for keyInput. mapOrder
// permutes the order map entries are written in, which must not matter.
func (in *keyInput) write(b *idemimpl.KeyBuilder, mapOrder int) {
	b.String(in.A)
	b.Int(in.B)
	b.Uint(in.C)
	b.Float(in.D)
	if in.E == nil {
		b.Nil()
	} else {
		b.Bytes(in.E)
	}
	if in.F == nil {
		b.Nil()
	} else {
		b.Ptr()
		b.String(*in.F)
	}
	if in.G == nil {
		b.Nil()
	} else {
		b.List(len(in.G))
		for _, s := range in.G {
			b.String(s)
		}
	}
	if in.H == nil {
		b.Nil()
	} else {
		keys := make([]string, 0, len(in.H))
		for k := range in.H {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if mapOrder%2 == 1 {
			slices.Reverse(keys)
		}
		if n := len(keys); n > 0 {
			r := mapOrder % n
			keys = append(keys[r:], keys[:r]...)
		}
		b.MapStart(len(keys))
		for _, k := range keys {
			b.MapEntry()
			b.String(k)
			b.Int(in.H[k])
		}
		b.MapEnd()
	}
	b.Time(in.T)
	b.Bool(in.I)
	b.Key(in.K)
	b.Complex(in.Cx)
	b.Marshaled(in.Raw, nil)
}

// decodeKeyInput turns fuzz bytes into a keyInput deterministically.
type byteReader struct{ b []byte }

func (r *byteReader) byte() byte {
	if len(r.b) == 0 {
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *byteReader) u64() uint64 {
	var v uint64
	for i := 0; i < 8; i++ {
		v = v<<8 | uint64(r.byte())
	}
	return v
}

func (r *byteReader) bytes() []byte {
	n := int(r.byte() % 24)
	if n > len(r.b) {
		n = len(r.b)
	}
	p := append([]byte{}, r.b[:n]...)
	r.b = r.b[n:]
	return p
}

func decodeKeyInput(p []byte) keyInput {
	r := &byteReader{b: p}
	flags := r.byte()
	var in keyInput
	in.A = string(r.bytes())
	in.B = int64(r.u64() >> (r.byte() % 64))
	in.C = r.u64() >> (r.byte() % 64)
	in.D = math.Float64frombits(r.u64())
	if flags&1 != 0 {
		in.E = r.bytes()
	}
	if flags&2 != 0 {
		s := string(r.bytes())
		in.F = &s
	}
	if flags&4 != 0 {
		in.G = []string{}
		for n := r.byte() % 4; n > 0; n-- {
			in.G = append(in.G, string(r.bytes()))
		}
	}
	if flags&8 != 0 {
		in.H = map[string]int64{}
		for n := r.byte() % 4; n > 0; n-- {
			in.H[string(r.bytes())] = int64(int8(r.byte()))
		}
	}
	in.T = time.Unix(int64(r.u64()>>(r.byte()%64+1)), int64(r.u64()%1e9))
	if flags&16 != 0 {
		in.T = in.T.In(time.FixedZone("x", 3600*int(int8(r.byte())%14)))
	}
	in.I = flags&32 != 0
	for n := r.byte() % 5; n > 0; n-- {
		switch r.byte() % 6 {
		case 0:
			in.K = append(in.K, string(r.bytes()))
		case 1:
			in.K = append(in.K, int64(int8(r.byte())))
		case 2:
			in.K = append(in.K, uint64(r.byte()))
		case 3:
			in.K = append(in.K, r.byte()%2 == 0)
		case 4:
			in.K = append(in.K, r.bytes())
		case 5:
			in.K = append(in.K, nil)
		}
	}
	if flags&64 != 0 {
		in.Cx = complex(math.Float64frombits(r.u64()), float64(int8(r.byte())))
	}
	in.Raw = r.bytes()
	return in
}

// canonical maps a keyInput to a value whose equality is the key's
// intended equality: -0 is 0, a time is its instant, a map is its set of
// entries. Two inputs are "equal" exactly when their canonical forms are.
func (in keyInput) canonical() any {
	fl := func(f float64) float64 {
		if f == 0 {
			return 0
		}
		return f
	}
	type canon struct {
		In    keyInput
		D     float64
		Cr    float64
		Ci    float64
		TSec  int64
		TNano int
	}
	c := canon{In: in, D: fl(in.D), Cr: fl(real(in.Cx)), Ci: fl(imag(in.Cx)), TSec: in.T.Unix(), TNano: in.T.Nanosecond()}
	c.In.D, c.In.Cx, c.In.T = 0, 0, time.Time{}
	return c
}

func hasNaN(in keyInput) bool {
	return math.IsNaN(in.D) || math.IsNaN(real(in.Cx)) || math.IsNaN(imag(in.Cx))
}

var fuzzSpec = &idem.Spec{Name: "reliability.keyfuzz"}

func storeKey(t *testing.T, g *idem.Guard, in *keyInput, mapOrder int) (string, error) {
	t.Helper()
	c, k := idemimpl.Begin(g, fuzzSpec)
	in.write(k.Key(), mapOrder)
	return c.StoreKey()
}

// FuzzKeyBuilder checks the key encoding through the exported API (a
// Guard's Call and Call.StoreKey, as generated code uses it): equal inputs
// (by the key's notion of equality: -0 == 0, a time's instant, a map's
// entries in any order) always get the same store key, and distinct inputs
// never do. Each run compares two decoded inputs, plus the first input with
// a "boundary shifted" twin (a byte moved from one string field into the
// next), the classic way to collide an encoding that is not prefix-free.
//
//	go test -run '^$' -fuzz '^FuzzKeyBuilder$' -fuzztime 5m -parallel 1 ./test/reliability
func FuzzKeyBuilder(f *testing.F) {
	f.Add([]byte{}, []byte{0})
	f.Add([]byte{0xff, 3, 'a', 'b', 'c', 1, 2, 3, 4, 5, 6, 7, 8, 9}, []byte{0xff, 2, 'a', 'b', 1, 'c', 2, 3, 4, 5, 6, 7, 8, 9})
	f.Add([]byte{0x0f, 1, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80}, []byte{0x0f, 1, 'x', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	g := idem.NewGuard(memstore.New())
	f.Fuzz(func(t *testing.T, a, b []byte) {
		x, y := decodeKeyInput(a), decodeKeyInput(b)
		ka, erra := storeKey(t, g, &x, 0)
		if hasNaN(x) {
			if !errors.Is(erra, idem.ErrInvalidKey) {
				t.Fatalf("NaN in key: got %v, want ErrInvalidKey", erra)
			}
			return
		}
		if erra != nil {
			t.Fatalf("key of %+v: %v", x, erra)
		}
		// Equal inputs always share a key: the same input again, with
		// its map written in other orders.
		for order := 1; order < 4; order++ {
			if k, err := storeKey(t, g, &x, order); err != nil || k != ka {
				t.Fatalf("same input, map order %d: key %s (err %v), want %s", order, k, err, ka)
			}
		}
		check := func(y keyInput, what string) {
			if hasNaN(y) {
				return
			}
			ky, err := storeKey(t, g, &y, 0)
			if err != nil {
				t.Fatalf("key of %+v: %v", y, err)
			}
			equal := cmp.Equal(x.canonical(), y.canonical())
			if equal != (ka == ky) {
				t.Fatalf("%s: inputs equal=%v but keys equal=%v\nx=%#v\ny=%#v", what, equal, ka == ky, x, y)
			}
		}
		check(y, "second input")
		if x.A != "" && x.G != nil && len(x.G) > 0 {
			s := x
			s.G = append([]string{x.A[len(x.A)-1:] + x.G[0]}, x.G[1:]...)
			s.A = x.A[:len(x.A)-1]
			check(s, "boundary shifted A→G")
		}
		if len(x.K) > 0 {
			if str, ok := x.K[0].(string); ok && str != "" {
				s := x
				s.K = append(tagged{str[:len(str)-1], str[len(str)-1:]}, x.K[1:]...)
				check(s, "keyer string split")
			}
		}
	})
}
