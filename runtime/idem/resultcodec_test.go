package idem_test

import (
	"bytes"
	"context"
	"errors"
	"math"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
	"github.com/idemgen/idemgen/runtime/idemstore"
	"github.com/idemgen/idemgen/runtime/memstore"
)

// shapeV1 and shapeV2 are one result type before and after a change:
// B removed, C added.
type shapeV1 struct {
	A string
	B int64
	F []float64
	M map[string][]byte
	P *shapeV1
}

type shapeV2 struct {
	A string
	C uint32
	F []float64
	M map[string][]byte
	P *shapeV2
}

// Hand-written the way idemgen writes them.
func encV1(e *idemimpl.Encoder, v *shapeV1) {
	at := e.Struct()
	e.Field("A")
	e.String(v.A)
	e.Field("B")
	e.Int(v.B)
	encTail(e, v.F, v.M, v.P, encV1)
	e.End(at)
}

func decV1(d *idemimpl.Decoder, v *shapeV1) {
	s := d.Struct()
	v.A = d.Field(s, "A").String()
	v.B = d.Field(s, "B").Int(64)
	v.P = decTail(d, s, &v.F, &v.M, decV1)
	d.End(s)
}

func encV2(e *idemimpl.Encoder, v *shapeV2) {
	at := e.Struct()
	e.Field("A")
	e.String(v.A)
	e.Field("C")
	e.Uint(uint64(v.C))
	encTail(e, v.F, v.M, v.P, encV2)
	e.End(at)
}

func decV2(d *idemimpl.Decoder, v *shapeV2) {
	s := d.Struct()
	v.A = d.Field(s, "A").String()
	v.C = uint32(d.Field(s, "C").Uint(32))
	v.P = decTail(d, s, &v.F, &v.M, decV2)
	d.End(s)
}

// encTail writes the fields both shapes end with: F, M and P.
func encTail[T any](e *idemimpl.Encoder, f []float64, m map[string][]byte, p *T, enc func(*idemimpl.Encoder, *T)) {
	e.Field("F")
	idemimpl.EncList(e, f, idemimpl.EncFloat64[float64])
	e.Field("M")
	idemimpl.EncMap(e, m, (*idemimpl.Encoder).String, (*idemimpl.Encoder).Bytes)
	e.Field("P")
	idemimpl.EncPtr(e, p, enc)
}

// decTail reads what encTail wrote into f and m, and returns P.
func decTail[T any](d *idemimpl.Decoder, s idemimpl.Struct, f *[]float64, m *map[string][]byte, dec func(*idemimpl.Decoder, *T)) *T {
	idemimpl.DecList(d.Field(s, "F"), f, idemimpl.DecFloat64[float64])
	idemimpl.DecMap(d.Field(s, "M"), m, (*idemimpl.Decoder).String, (*idemimpl.Decoder).Bytes)
	var p *T
	idemimpl.DecPtr(d.Field(s, "P"), &p, dec)
	return p
}

var (
	codecV1 = idemimpl.TypedCodec[shapeV1]{Encode: encV1, Decode: decV1}
	codecV2 = idemimpl.TypedCodec[shapeV2]{Encode: encV2, Decode: decV2}
)

// captureStore keeps the bytes of the last completed record.
type captureStore struct {
	bytesOnly
	last []byte
}

func (s *captureStore) Complete(ctx context.Context, l idemstore.Lease, r idemstore.Result) error {
	s.last = r.Data
	return s.bytesOnly.Complete(ctx, l, r)
}

func TestSpecCodecReplaysFaithfully(t *testing.T) {
	st := &captureStore{bytesOnly: bytesOnly{memstore.New()}}
	g := idem.NewGuard(st)
	spec := &idem.Spec{Name: "test.SpecCodec", Codec: codecV1}
	orig := shapeV1{
		A: "a", B: -7,
		F: []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 1.5},
		M: map[string][]byte{"nil": nil, "empty": {}, "x": {1, 2}},
		P: &shapeV1{F: []float64{}, M: map[string][]byte{}},
	}
	var runs atomic.Int64
	var fromCtx []byte // what LeaseFrom's codec writes for orig
	fn := func(ctx context.Context) (shapeV1, error) {
		if _, c, ok := idem.LeaseFrom(ctx); !ok || c == nil {
			t.Error("LeaseFrom: no codec")
		} else {
			var err error
			if fromCtx, err = c.Marshal(orig); err != nil {
				t.Errorf("LeaseFrom's Marshal: %v", err)
			}
		}
		runs.Add(1)
		return orig, nil
	}
	if _, err := call(context.Background(), g, spec, "k", fn); err != nil {
		t.Fatal(err)
	}
	h, body, ok, err := idemimpl.SplitRecord(st.last)
	if err != nil || !ok {
		t.Fatalf("record %q: no identity header (%v)", st.last, err)
	}
	if diff := cmp.Diff(idemimpl.RecordHeader{Signature: spec.Signature}, h); diff != "" {
		t.Errorf("record header (-want +got):\n%s", diff)
	}
	if len(body) < 2 || body[0] != idemimpl.CodecMarker {
		t.Fatalf("record body %q does not start with the codec marker", body)
	}
	// LeaseFrom's codec writes the Guard's header and the Spec codec's
	// record (this test codec writes maps in iteration order, so the
	// bodies are compared decoded).
	head := st.last[:len(st.last)-len(body)]
	var fromBody shapeV1
	if !bytes.HasPrefix(fromCtx, head) {
		t.Errorf("LeaseFrom's codec wrote %q, not behind the Guard's header %q", fromCtx, head)
	} else if err := codecV1.Unmarshal(fromCtx[len(head):], &fromBody); err != nil {
		t.Errorf("LeaseFrom's record: %v", err)
	}
	got, err := call(context.Background(), g, spec, "k", fn)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Load() != 1 {
		t.Fatalf("ran %d times", runs.Load())
	}
	opt := cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
	if diff := cmp.Diff(orig, got, opt); diff != "" {
		t.Errorf("replay (-orig +got):\n%s", diff)
	}
}

// A record written before the function had a codec (JSON, the Guard's)
// still replays; one written by an older shape of the result type
// decodes with added fields zero and removed fields ignored.
func TestSpecCodecReadsOlderRecords(t *testing.T) {
	store := bytesOnly{memstore.New()}
	g := idem.NewGuard(store)
	ctx := context.Background()
	never := func(context.Context) (shapeV2, error) {
		t.Error("the function ran again")
		return shapeV2{}, nil
	}

	legacy := &idem.Spec{Name: "test.Upgrade"}
	if _, err := call(ctx, g, legacy, "json", func(context.Context) (shapeV2, error) {
		return shapeV2{A: "from json", C: 3, F: []float64{}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	upgraded := &idem.Spec{Name: "test.Upgrade", Codec: codecV2}
	got, err := call(ctx, g, upgraded, "json", never)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shapeV2{A: "from json", C: 3, F: []float64{}}, got); diff != "" {
		t.Errorf("JSON record (-want +got):\n%s", diff)
	}

	old := &idem.Spec{Name: "test.Upgrade", Codec: codecV1}
	if _, err := call(ctx, g, old, "v1", func(context.Context) (shapeV1, error) {
		return shapeV1{A: "v1", B: 9, P: &shapeV1{A: "inner", B: 1}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	got, err = call(ctx, g, upgraded, "v1", never)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shapeV2{A: "v1", P: &shapeV2{A: "inner"}}, got); diff != "" {
		t.Errorf("v1 record under v2 (-want +got):\n%s", diff)
	}
}

// shapeRetyped is shapeV1 with B's type changed: incompatible.
type shapeRetyped struct{ B string }

func TestSpecCodecIncompatibleFailsClosed(t *testing.T) {
	g := idem.NewGuard(bytesOnly{memstore.New()})
	ctx := context.Background()
	old := &idem.Spec{Name: "test.Retyped", Codec: codecV1}
	if _, err := call(ctx, g, old, "k", func(context.Context) (shapeV1, error) { return shapeV1{B: 5}, nil }); err != nil {
		t.Fatal(err)
	}
	retyped := &idem.Spec{Name: "test.Retyped", Codec: idemimpl.TypedCodec[shapeRetyped]{
		Encode: func(e *idemimpl.Encoder, v *shapeRetyped) { at := e.Struct(); e.Field("B"); e.String(v.B); e.End(at) },
		Decode: func(d *idemimpl.Decoder, v *shapeRetyped) {
			s := d.Struct()
			v.B = d.Field(s, "B").String()
			d.End(s)
		},
	}}
	for range 2 {
		_, err := call(ctx, g, retyped, "k", func(context.Context) (shapeRetyped, error) {
			t.Error("the function ran again")
			return shapeRetyped{}, nil
		})
		if !errors.Is(err, idem.ErrResultIncompatible) {
			t.Fatalf("err = %v, want ErrResultIncompatible", err)
		}
	}
}

// rawCodec writes fixed bytes, to plant a record.
type rawCodec struct{ data []byte }

func (c rawCodec) Marshal(any) ([]byte, error) { return c.data, nil }
func (c rawCodec) Unmarshal([]byte, any) error { return errors.New("unused") }

func TestSpecCodecCorruptRecord(t *testing.T) {
	for name, data := range map[string][]byte{
		"marker, garbage":      {idemimpl.CodecMarker, idemimpl.CodecVersion, 0xff, 0xff},
		"marker, truncated":    {idemimpl.CodecMarker, idemimpl.CodecVersion, 9, 200, 0, 0, 0},
		"marker, next version": {idemimpl.CodecMarker, idemimpl.CodecVersion + 1},
		"marker only":          {idemimpl.CodecMarker},
		"neither codec's":      []byte("\x00\x01binary"),
		"trailing bytes":       {idemimpl.CodecMarker, idemimpl.CodecVersion, 9, 0, 0, 0, 0, 0},
	} {
		t.Run(name, func(t *testing.T) {
			g := idem.NewGuard(bytesOnly{memstore.New()})
			ctx := context.Background()
			plant := &idem.Spec{Name: "test.Corrupt", Codec: rawCodec{data}}
			if _, err := call(ctx, g, plant, "k", func(context.Context) (int, error) { return 0, nil }); err != nil {
				t.Fatal(err)
			}
			spec := &idem.Spec{Name: "test.Corrupt", Codec: codecV1}
			_, err := call(ctx, g, spec, "k", func(context.Context) (shapeV1, error) {
				t.Error("the function ran again")
				return shapeV1{}, nil
			})
			if !errors.Is(err, idem.ErrCorruptRecord) {
				t.Fatalf("err = %v, want ErrCorruptRecord", err)
			}
		})
	}
}

// A result the Spec's codec cannot encode is recorded as a failure, never
// released: the function does not run again.
func TestSpecCodecEncodeErrorLocksKey(t *testing.T) {
	g := idem.NewGuard(memstore.New())
	failing := idemimpl.TypedCodec[int]{
		Encode: func(e *idemimpl.Encoder, v *int) { e.Marshaled(nil, errors.New("no")) },
		Decode: func(d *idemimpl.Decoder, v *int) {},
	}
	spec := &idem.Spec{Name: "test.EncodeError", Codec: failing}
	var runs atomic.Int64
	fn := func(context.Context) (int, error) { runs.Add(1); return 1, nil }
	v, err := call(context.Background(), g, spec, "k", fn)
	if v != 1 || !errors.Is(err, idem.ErrResultNotEncodable) {
		t.Fatalf("first call: %v, %v; want 1 and ErrResultNotEncodable", v, err)
	}
	_, err = call(context.Background(), g, spec, "k", fn)
	if !errors.Is(err, idem.ErrResultNotEncodable) || runs.Load() != 1 {
		t.Fatalf("duplicate: %v after %d runs; want the recorded failure after 1", err, runs.Load())
	}
}

// FuzzTypedCodecDecode: no input panics or hangs the decoder, every
// failure is ErrCorruptRecord or ErrResultIncompatible, and what decodes
// re-encodes to a record that decodes to the same value.
func FuzzTypedCodecDecode(f *testing.F) {
	for _, v := range []shapeV1{
		{},
		{A: "a", B: -1, F: []float64{math.NaN(), 0}, M: map[string][]byte{"k": nil, "e": {}}},
		{P: &shapeV1{P: &shapeV1{A: "deep"}}, F: []float64{}},
	} {
		data, err := codecV1.Marshal(v)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
		if v2, err := codecV2.Marshal(shapeV2{A: v.A, C: 7, F: v.F, M: v.M}); err == nil {
			f.Add(v2)
		}
	}
	f.Add([]byte{idemimpl.CodecMarker, idemimpl.CodecVersion})
	f.Add([]byte(`{"A":"json"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v shapeV1
		err := codecV1.Unmarshal(data, &v)
		if err != nil {
			if !errors.Is(err, idem.ErrCorruptRecord) && !errors.Is(err, idem.ErrResultIncompatible) {
				t.Fatalf("error %v is neither ErrCorruptRecord nor ErrResultIncompatible", err)
			}
			return
		}
		again, err := codecV1.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		var w shapeV1
		if err := codecV1.Unmarshal(again, &w); err != nil {
			t.Fatalf("re-encoded record does not decode: %v", err)
		}
		opt := cmp.Comparer(func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) })
		if diff := cmp.Diff(v, w, opt); diff != "" {
			t.Fatalf("round trip differs:\n%s", diff)
		}
		var v2 shapeV2
		if err := codecV2.Unmarshal(data, &v2); err != nil && !errors.Is(err, idem.ErrCorruptRecord) && !errors.Is(err, idem.ErrResultIncompatible) {
			t.Fatalf("v2: error %v", err)
		}
	})
}
