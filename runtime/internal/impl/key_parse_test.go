package impl

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// A kv is one value of the key encoding's own model: what a sequence of
// KeyBuilder calls writes, and what parseKey reads back from the bytes
// alone. If every random sequence reads back as itself, no value's bytes
// are a prefix of another's and two sequences share bytes only if they
// hold the same values: the encoding is injective whatever the types.
type kv struct {
	Kind  byte
	Int   int64
	Uint  uint64
	Float uint64 // bits
	Str   string
	Kids  []kv // ptr: 1, list: n, map: 2n (key, value), keyer: any
}

func randKV(r *rand.Rand, depth int) kv {
	kinds := []byte{tagFalse, tagTrue, tagInt, tagUint, tagFloat, tagComplex, tagString, tagBytes, tagTime, tagNil}
	if depth < 4 {
		kinds = append(kinds, tagPtr, tagList, tagMap, tagOpen, tagAny)
	}
	v := kv{Kind: kinds[r.IntN(len(kinds))]}
	small := func() int64 { return int64(r.IntN(300)) - 150 }
	switch v.Kind {
	case tagInt:
		v.Int = small()
		if r.IntN(4) == 0 {
			v.Int = int64(r.Uint64())
		}
	case tagUint:
		v.Uint = uint64(r.IntN(300))
	case tagFloat:
		v.Float = math.Float64bits([]float64{0, 1, -1.5, math.Inf(1), math.Inf(-1), 1e300, float64(small())}[r.IntN(7)])
	case tagComplex:
		v.Kids = []kv{
			{Kind: tagFloat, Float: math.Float64bits(float64(small()))},
			{Kind: tagFloat, Float: math.Float64bits(float64(small()))},
		}
	case tagString, tagBytes:
		v.Str = strings.Repeat(string(rune('a'+r.IntN(3))), r.IntN(4)) + string([]byte{tagNil, tagClose, 0}[:r.IntN(3)])
	case tagTime:
		v.Int, v.Uint = small(), uint64(r.IntN(1e9))
	case tagPtr:
		v.Kids = []kv{randKV(r, depth+1)}
	case tagAny: // nil, or a type's identity and a value
		if r.IntN(4) == 0 {
			v.Kids = []kv{{Kind: tagNil}}
			break
		}
		v.Kids = []kv{{Kind: tagString, Str: []string{"int", "string", `"p".T`}[r.IntN(3)]}, randKV(r, depth+1)}
	case tagList, tagOpen:
		for range r.IntN(4) {
			v.Kids = append(v.Kids, randKV(r, depth+1))
		}
	case tagMap:
		seen := map[string]bool{}
		for range r.IntN(4) {
			k := randKV(r, depth+1)
			var b KeyBuilder
			writeKV(&b, k)
			if seen[string(b.buf)] {
				continue // a map's keys are distinct
			}
			seen[string(b.buf)] = true
			v.Kids = append(v.Kids, k, randKV(r, depth+1))
		}
	}
	return v
}

func writeKV(b *KeyBuilder, v kv) {
	switch v.Kind {
	case tagFalse, tagTrue:
		b.Bool(v.Kind == tagTrue)
	case tagInt:
		b.Int(v.Int)
	case tagUint:
		b.Uint(v.Uint)
	case tagFloat:
		b.Float(math.Float64frombits(v.Float))
	case tagComplex:
		b.Complex(complex(math.Float64frombits(v.Kids[0].Float), math.Float64frombits(v.Kids[1].Float)))
	case tagString:
		b.String(v.Str)
	case tagBytes:
		b.Bytes([]byte(v.Str))
	case tagTime:
		b.Time(time.Unix(v.Int, int64(v.Uint)))
	case tagNil:
		b.Nil()
	case tagPtr:
		b.Ptr()
		writeKV(b, v.Kids[0])
	case tagAny: // as KeyBuilder.Any writes it
		b.tag(tagAny)
		for _, k := range v.Kids {
			writeKV(b, k)
		}
	case tagList:
		b.List(len(v.Kids))
		for _, k := range v.Kids {
			writeKV(b, k)
		}
	case tagMap:
		b.MapStart(len(v.Kids) / 2)
		for i := 0; i < len(v.Kids); i += 2 {
			b.MapEntry()
			writeKV(b, v.Kids[i])
			writeKV(b, v.Kids[i+1])
		}
		b.MapEnd()
	case tagOpen:
		b.Open()
		for _, k := range v.Kids {
			writeKV(b, k)
		}
		b.Close()
	}
}

// canonKV is v as parseKey returns it: -0 written as 0, map entries in
// the order of their encoded bytes.
func canonKV(v kv) kv {
	if v.Kind == tagFloat && v.Float == math.Float64bits(math.Copysign(0, -1)) {
		v.Float = 0
	}
	kids := make([]kv, len(v.Kids))
	for i, k := range v.Kids {
		kids[i] = canonKV(k)
	}
	if v.Kids == nil {
		kids = nil
	}
	if v.Kind == tagMap {
		type entry struct {
			enc  string
			k, v kv
		}
		var es []entry
		for i := 0; i < len(kids); i += 2 {
			var b KeyBuilder
			writeKV(&b, kids[i])
			writeKV(&b, kids[i+1])
			es = append(es, entry{string(b.buf), kids[i], kids[i+1]})
		}
		slices.SortFunc(es, func(a, b entry) int { return strings.Compare(a.enc, b.enc) })
		kids = kids[:0]
		for _, e := range es {
			kids = append(kids, e.k, e.v)
		}
	}
	v.Kids = kids
	return v
}

// parseKey reads one value from p without knowing its type.
func parseKey(p []byte) (kv, []byte, error) {
	if len(p) == 0 {
		return kv{}, nil, fmt.Errorf("truncated")
	}
	v := kv{Kind: p[0]}
	p = p[1:]
	uv := func() (uint64, error) {
		x, n := binary.Uvarint(p)
		if n <= 0 {
			return 0, fmt.Errorf("bad uvarint")
		}
		p = p[n:]
		return x, nil
	}
	var err error
	switch v.Kind {
	case tagFalse, tagTrue, tagNil:
	case tagInt:
		x, n := binary.Varint(p)
		if n <= 0 {
			return v, nil, fmt.Errorf("bad varint")
		}
		v.Int, p = x, p[n:]
	case tagUint:
		v.Uint, err = uv()
	case tagFloat:
		if len(p) < 8 {
			return v, nil, fmt.Errorf("short float")
		}
		v.Float, p = binary.BigEndian.Uint64(p), p[8:]
	case tagComplex:
		p, err = parseN(&v, p, 2)
	case tagString, tagBytes:
		var n uint64
		if n, err = uv(); err == nil {
			if uint64(len(p)) < n {
				return v, nil, fmt.Errorf("short string")
			}
			v.Str, p = string(p[:n]), p[n:]
		}
	case tagTime:
		x, n := binary.Varint(p)
		if n <= 0 {
			return v, nil, fmt.Errorf("bad time")
		}
		v.Int, p = x, p[n:]
		v.Uint, err = uv()
	case tagPtr:
		p, err = parseN(&v, p, 1)
	case tagAny:
		if p, err = parseN(&v, p, 1); err != nil || v.Kids[0].Kind == tagNil {
			break
		}
		if k := v.Kids[0].Kind; k != tagString {
			return v, nil, fmt.Errorf("a dynamic value's type is a %q", k)
		}
		p, err = parseN(&v, p, 1)
	case tagList, tagMap:
		var n uint64
		if n, err = uv(); err != nil {
			return v, nil, err
		}
		if v.Kind == tagMap {
			n *= 2
		}
		p, err = parseN(&v, p, n)
	case tagOpen:
		p, err = parseOpen(&v, p)
	default:
		return v, nil, fmt.Errorf("unknown tag %q", v.Kind)
	}
	return v, p, err
}

// parseN parses n keys off p into v's Kids.
func parseN(v *kv, p []byte, n uint64) ([]byte, error) {
	for range n {
		k, rest, err := parseKey(p)
		if err != nil {
			return nil, err
		}
		v.Kids, p = append(v.Kids, k), rest
	}
	return p, nil
}

// parseOpen parses a Keyer's keys into v's Kids, up to and past its close.
func parseOpen(v *kv, p []byte) ([]byte, error) {
	for len(p) > 0 && p[0] != tagClose {
		var err error
		if p, err = parseN(v, p, 1); err != nil {
			return nil, err
		}
	}
	if len(p) == 0 {
		return nil, fmt.Errorf("unclosed keyer")
	}
	return p[1:], nil
}

func checkKeyParse(t *testing.T, r *rand.Rand) {
	t.Helper()
	var vs []kv
	var b KeyBuilder
	for range 1 + r.IntN(4) {
		v := randKV(r, 0)
		vs = append(vs, canonKV(v))
		writeKV(&b, v)
	}
	if b.err != nil || b.flushed {
		t.Fatalf("builder: err %v, flushed %v", b.err, b.flushed)
	}
	var got []kv
	p := b.buf
	for len(p) > 0 {
		v, rest, err := parseKey(p)
		if err != nil {
			t.Fatalf("parse %q: %v", b.buf, err)
		}
		got, p = append(got, v), rest
	}
	if diff := cmp.Diff(vs, got); diff != "" {
		t.Fatalf("the bytes %q read back as other values (-wrote +read):\n%s", b.buf, diff)
	}
}

// TestKeyEncodingSelfDelimiting: random sequences of values read back as
// themselves from their bytes alone.
func TestKeyEncodingSelfDelimiting(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for range 20000 {
		checkKeyParse(t, r)
	}
}

func FuzzKeyEncodingSelfDelimiting(f *testing.F) {
	for _, s := range []uint64{0, 1, 55, 1 << 40} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		checkKeyParse(t, rand.New(rand.NewPCG(seed, seed>>7)))
	})
}
