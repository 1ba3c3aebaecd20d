package impl

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// line is a struct with helpers written as idemgen writes them.
type line struct {
	SKU string
	Qty int64
}

type lines []line

func keyLine(b *KeyBuilder, v *line) {
	b.String(v.SKU)
	b.Int(v.Qty)
}

func encLine(e *Encoder, v *line) {
	at := e.Struct()
	e.Field("SKU")
	e.String(v.SKU)
	e.Field("Qty")
	e.Int(v.Qty)
	e.End(at)
}

func decLine(d *Decoder, v *line) {
	s := d.Struct()
	v.SKU = d.Field(s, "SKU").String()
	v.Qty = d.Field(s, "Qty").Int(64)
	d.End(s)
}

// The inline forms the combinators stand for, as idemgen generated them.

func keyPtrInline(b *KeyBuilder, p *line) {
	if p == nil {
		b.Nil()
	} else {
		b.Ptr()
		keyLine(b, p)
	}
}

func keyListInline(b *KeyBuilder, s []string) {
	if s == nil {
		b.Nil()
	} else {
		b.List(len(s))
		for i := range s {
			b.String(s[i])
		}
	}
}

func keyPointsInline(b *KeyBuilder, s lines) {
	if s == nil {
		b.Nil()
	} else {
		b.List(len(s))
		for i := range s {
			keyLine(b, &s[i])
		}
	}
}

func keyPointsHead(b *KeyBuilder, s lines) {
	KeyListHead(b, s)
	for i := range s {
		keyLine(b, &s[i])
	}
}

func keyMapInline(b *KeyBuilder, m map[string]int) {
	if m == nil {
		b.Nil()
	} else {
		b.MapStart(len(m))
		for k, e := range m {
			b.MapEntry()
			b.String(k)
			b.Int(int64(e))
		}
		b.MapEnd()
	}
}

// bigMap has entries enough that its iteration order varies.
var bigMap = func() map[string]int {
	m := map[string]int{}
	for i := range 64 {
		m[string(rune('a'+i%26))+strconv.Itoa(i)] = i
	}
	return m
}()

var listInline = TypedCodec[lines]{
	Encode: func(e *Encoder, v *lines) {
		if *v == nil {
			e.Nil()
		} else {
			at := e.List(len(*v))
			for i := range *v {
				encLine(e, &(*v)[i])
			}
			e.End(at)
		}
	},
	Decode: func(d *Decoder, v *lines) {
		if d.Nil() {
			*v = nil
		} else {
			*v = make(lines, d.List())
			for i := range *v {
				decLine(d, &(*v)[i])
			}
		}
	},
}

var listHead = TypedCodec[lines]{
	Encode: listInline.Encode,
	Decode: func(d *Decoder, v *lines) {
		DecListHead(d, v)
		for i := range *v {
			decLine(d, &(*v)[i])
		}
	},
}

var mapInline = TypedCodec[map[string]float64]{
	Encode: func(e *Encoder, v *map[string]float64) {
		if *v == nil {
			e.Nil()
		} else {
			at := e.Map(len(*v))
			for _, k := range slices.Sorted(maps.Keys(*v)) {
				x := (*v)[k]
				e.String(k)
				e.Float64(x)
			}
			e.End(at)
		}
	},
	Decode: func(d *Decoder, v *map[string]float64) {
		if d.Nil() {
			*v = nil
		} else {
			n := d.Map()
			*v = make(map[string]float64, n)
			for range n {
				var k string
				var x float64
				k = d.String()
				x = d.Float64()
				(*v)[k] = x
			}
		}
	},
}

var mapComposed = TypedCodec[map[string]float64]{
	Encode: func(e *Encoder, v *map[string]float64) { EncMap(e, *v, (*Encoder).String, (*Encoder).Float64) },
	Decode: func(d *Decoder, v *map[string]float64) { DecMap(d, v, (*Decoder).String, (*Decoder).Float64) },
}

// floatMap has entries enough that its iteration order varies.
var floatMap = func() map[string]float64 {
	m := map[string]float64{}
	for i := range 64 {
		m[strconv.Itoa(i)] = float64(i) / 3
	}
	return m
}()

var listComposed = TypedCodec[lines]{
	Encode: func(e *Encoder, v *lines) { EncList(e, *v, encLine) },
	Decode: func(d *Decoder, v *lines) { DecList(d, v, decLine) },
}

var ptrInline = TypedCodec[*line]{
	Encode: func(e *Encoder, v **line) {
		if *v == nil {
			e.Nil()
		} else {
			e.Ptr()
			encLine(e, *v)
		}
	},
	Decode: func(d *Decoder, v **line) {
		if d.Ptr() {
			*v = new(line)
			decLine(d, *v)
		} else {
			*v = nil
		}
	},
}

var ptrComposed = PtrCodec(encLine, decLine)

func material(write func(b *KeyBuilder)) []byte {
	var b KeyBuilder
	write(&b)
	m, _ := b.Material()
	return m
}

func TestComposedKeys(t *testing.T) {
	two := lines{{"a", 1}, {"b", -2}}
	tests := []struct {
		name             string
		inline, composed func(b *KeyBuilder)
	}{
		{"nil pointer", func(b *KeyBuilder) { keyPtrInline(b, nil) }, func(b *KeyBuilder) { KeyPtr(b, nil, keyLine) }},
		{"pointer", func(b *KeyBuilder) { keyPtrInline(b, &two[1]) }, func(b *KeyBuilder) { KeyPtr(b, &two[1], keyLine) }},
		{"string", func(b *KeyBuilder) { b.Ptr(); b.String("a") }, func(b *KeyBuilder) { x := "a"; KeyPtr(b, &x, KeyString) }},
		{"int", func(b *KeyBuilder) { b.Ptr(); b.Int(-1) }, func(b *KeyBuilder) { i := int8(-1); KeyPtr(b, &i, KeyInt) }},
		{"uint", func(b *KeyBuilder) { b.Ptr(); b.Uint(9) }, func(b *KeyBuilder) { u := uint16(9); KeyPtr(b, &u, KeyUint) }},
		{"bool", func(b *KeyBuilder) { b.Ptr(); b.Bool(true) }, func(b *KeyBuilder) { t := true; KeyPtr(b, &t, KeyBool) }},
		{"float32", func(b *KeyBuilder) { b.Ptr(); b.Float(float64(float32(0.1))) }, func(b *KeyBuilder) { f := float32(0.1); KeyPtr(b, &f, KeyFloat) }},
		{"nil list", func(b *KeyBuilder) { keyListInline(b, nil) }, func(b *KeyBuilder) { KeyList(b, []string(nil), StringKey) }},
		{"empty list", func(b *KeyBuilder) { keyListInline(b, []string{}) }, func(b *KeyBuilder) { KeyList(b, []string{}, StringKey) }},
		{"list", func(b *KeyBuilder) { keyListInline(b, []string{"a", ""}) }, func(b *KeyBuilder) { KeyList(b, []string{"a", ""}, StringKey) }},
		{"int list", func(b *KeyBuilder) { b.List(2); b.Int(-1); b.Int(7) }, func(b *KeyBuilder) { KeyList(b, []int8{-1, 7}, IntKey) }},
		{"uint list", func(b *KeyBuilder) { b.List(1); b.Uint(9) }, func(b *KeyBuilder) { KeyList(b, []uint32{9}, UintKey) }},
		{"bool list", func(b *KeyBuilder) { b.List(1); b.Bool(true) }, func(b *KeyBuilder) { KeyList(b, []bool{true}, BoolKey) }},
		{"float list", func(b *KeyBuilder) { b.List(1); b.Float(float64(float32(0.1))) }, func(b *KeyBuilder) { KeyList(b, []float32{0.1}, FloatKey) }},
		{"nil list head", func(b *KeyBuilder) { keyPointsInline(b, nil) }, func(b *KeyBuilder) { keyPointsHead(b, nil) }},
		{"empty list head", func(b *KeyBuilder) { keyPointsInline(b, lines{}) }, func(b *KeyBuilder) { keyPointsHead(b, lines{}) }},
		{"list head", func(b *KeyBuilder) { keyPointsInline(b, two) }, func(b *KeyBuilder) { keyPointsHead(b, two) }},
		{"nil map", func(b *KeyBuilder) { keyMapInline(b, nil) }, func(b *KeyBuilder) { KeyMap(b, map[string]int(nil), StringKey, IntKey) }},
		{"empty map", func(b *KeyBuilder) { keyMapInline(b, map[string]int{}) }, func(b *KeyBuilder) { KeyMap(b, map[string]int{}, StringKey, IntKey) }},
		{"map", func(b *KeyBuilder) { keyMapInline(b, bigMap) }, func(b *KeyBuilder) { KeyMap(b, bigMap, StringKey, IntKey) }},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(material(tt.inline), material(tt.composed)); diff != "" {
			t.Errorf("%s: key material differs (-inline +composed):\n%s", tt.name, diff)
		}
	}
}

// DecMap reads what the inline loop reads from every prefix of a record:
// the same value, the same error.
func TestDecMapPrefixes(t *testing.T) {
	rec, err := mapInline.Marshal(&floatMap)
	if err != nil {
		t.Fatal(err)
	}
	for n := range len(rec) + 1 {
		var want, got map[string]float64
		errW, errG := mapInline.Unmarshal(rec[:n], &want), mapComposed.Unmarshal(rec[:n], &got)
		if fmt.Sprint(errW) != fmt.Sprint(errG) {
			t.Errorf("prefix %d: error %v, inline %v", n, errG, errW)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("prefix %d: (-inline +composed):\n%s", n, diff)
		}
	}
}

// keyOnStack keys slices and a map it keeps on its stack: KeyList, KeyMap
// and KeyListHead, inlined or not, must not move them to the heap.
//
//go:noinline
func keyOnStack(b *KeyBuilder, a string, n int) {
	s := []string{a, "x"}
	KeyList(b, s, StringKey)
	ns := []int{n, 2}
	KeyList(b, ns, IntKey)
	m := map[string]int{a: n, "y": 1}
	KeyMap(b, m, StringKey, IntKey)
	ls := lines{{a, int64(n)}}
	KeyListHead(b, ls)
	for i := range ls {
		keyLine(b, &ls[i])
	}
}

func TestComposedKeysAllocations(t *testing.T) {
	var b KeyBuilder
	keyOnStack(&b, "a", 1) // the builder's buffers grow once
	if n := testing.AllocsPerRun(100, func() { b.Reset(); keyOnStack(&b, "a", 1) }); n != 0 {
		t.Errorf("KeyList, KeyMap and KeyListHead over a caller's stack: %v allocations, want 0", n)
	}
}

func TestComposedCodecs(t *testing.T) {
	type recordCodec interface {
		Marshal(v any) ([]byte, error)
		Unmarshal(data []byte, v any) error
	}
	type codecs struct{ inline, composed recordCodec }
	var (
		i64 int64  = -1 << 40
		u16 uint16 = 65535
		s          = "idem"
		yes        = true
		f          = 0.1
		one        = line{"x", 3}
	)
	tests := []struct {
		name string
		c    codecs
		vals []any
	}{
		{"list", codecs{listInline, listComposed}, []any{lines(nil), lines{}, lines{{"a", 1}, {"b", 2}}}},
		{"pointer", codecs{ptrInline, PtrCodec(encLine, decLine)}, []any{(*line)(nil), &one}},
		{"strings", codecs{TypedCodec[[]string]{
			Encode: func(e *Encoder, v *[]string) {
				if *v == nil {
					e.Nil()
				} else {
					at := e.List(len(*v))
					for i := range *v {
						e.String((*v)[i])
					}
					e.End(at)
				}
			},
			Decode: func(d *Decoder, v *[]string) {
				if d.Nil() {
					*v = nil
				} else {
					*v = make([]string, d.List())
					for i := range *v {
						(*v)[i] = d.String()
					}
				}
			},
		}, ListCodec[string](EncString, DecString)}, []any{[]string(nil), []string{}, []string{"a", ""}}},
		{"list head", codecs{listInline, listHead}, []any{lines(nil), lines{}, lines{{"a", 1}, {"b", 2}}}},
		{"map", codecs{mapInline, mapComposed}, []any{map[string]float64(nil), map[string]float64{}, floatMap}},
		{"value", codecs{TypedCodec[line]{Encode: encLine, Decode: decLine}, Codec(encLine, decLine)}, []any{one}},
		{"int", codecs{TypedCodec[int64]{Encode: func(e *Encoder, v *int64) { e.Int(*v) }, Decode: func(d *Decoder, v *int64) { *v = d.Int(64) }}, IntCodec[int64](64)}, []any{i64}},
		{"uint", codecs{TypedCodec[uint16]{Encode: func(e *Encoder, v *uint16) { e.Uint(uint64(*v)) }, Decode: func(d *Decoder, v *uint16) { *v = uint16(d.Uint(16)) }}, UintCodec[uint16](16)}, []any{u16}},
		{"string", codecs{TypedCodec[string]{Encode: func(e *Encoder, v *string) { e.String(*v) }, Decode: func(d *Decoder, v *string) { *v = d.String() }}, StringCodec[string]()}, []any{s}},
		{"bool", codecs{TypedCodec[bool]{Encode: func(e *Encoder, v *bool) { e.Bool(*v) }, Decode: func(d *Decoder, v *bool) { *v = d.Bool() }}, BoolCodec[bool]()}, []any{yes}},
		{"float64", codecs{TypedCodec[float64]{Encode: func(e *Encoder, v *float64) { e.Float64(*v) }, Decode: func(d *Decoder, v *float64) { *v = d.Float64() }}, Float64Codec[float64]()}, []any{f}},
	}
	for _, tt := range tests {
		for _, v := range tt.vals {
			want, err := tt.c.inline.Marshal(v)
			if err != nil {
				t.Fatalf("%s: inline Marshal(%v): %v", tt.name, v, err)
			}
			got, err := tt.c.composed.Marshal(v)
			if err != nil {
				t.Fatalf("%s: composed Marshal(%v): %v", tt.name, v, err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: record of %v differs (-inline +composed):\n%s", tt.name, v, diff)
			}
			back := reflect.New(reflect.TypeOf(v))
			if err := tt.c.composed.Unmarshal(got, back.Interface()); err != nil {
				t.Fatalf("%s: composed Unmarshal of %v: %v", tt.name, v, err)
			}
			if diff := cmp.Diff(v, back.Elem().Interface()); diff != "" {
				t.Errorf("%s: round trip of %v (-want +got):\n%s", tt.name, v, diff)
			}
		}
	}
}

// The combinators against the inline code they stand for, in one run:
//
//	go test -run '^$' -bench 'Composed' -count 5 ./runtime/internal/impl
func BenchmarkComposed(b *testing.B) {
	ls := make(lines, 8)
	for i := range ls {
		ls[i] = line{"sku", int64(i)}
	}
	rec, _ := listInline.Marshal(ls)
	ptrRec, _ := ptrInline.Marshal(&ls[1])
	fm := map[string]float64{"a": 1, "b": 2, "c": 3, "d": 4}
	mapRec, _ := mapInline.Marshal(&fm)
	var kb KeyBuilder
	strs := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	small := map[string]int{"a": 1, "b": 2, "c": 3, "d": 4}
	benches := []struct {
		name string
		run  func()
	}{
		{"key/pointer/inline", func() { kb.Reset(); keyPtrInline(&kb, &ls[1]) }},
		{"key/pointer/composed", func() { kb.Reset(); KeyPtr(&kb, &ls[1], keyLine) }},
		{"key/list/inline", func() { kb.Reset(); keyListInline(&kb, strs) }},
		{"key/list/composed", func() { kb.Reset(); KeyList(&kb, strs, StringKey) }},
		{"key/map/inline", func() { kb.Reset(); keyMapInline(&kb, small) }},
		{"key/map/composed", func() { kb.Reset(); KeyMap(&kb, small, StringKey, IntKey) }},
		{"encode/list/inline", func() { _, _ = listInline.Marshal(&ls) }},
		{"encode/list/composed", func() { _, _ = listComposed.Marshal(&ls) }},
		{"encode/pointer/inline", func() { _, _ = ptrInline.Marshal(&ls[1]) }},
		{"encode/pointer/composed", func() { _, _ = ptrComposed.Marshal(&ls[1]) }},
		{"decode/pointer/inline", func() { var v *line; _ = ptrInline.Unmarshal(ptrRec, &v) }},
		{"decode/pointer/composed", func() { var v *line; _ = ptrComposed.Unmarshal(ptrRec, &v) }},
		{"encode/map/inline", func() { _, _ = mapInline.Marshal(&fm) }},
		{"encode/map/composed", func() { _, _ = mapComposed.Marshal(&fm) }},
		{"decode/map/inline", func() { var v map[string]float64; _ = mapInline.Unmarshal(mapRec, &v) }},
		{"decode/map/composed", func() { var v map[string]float64; _ = mapComposed.Unmarshal(mapRec, &v) }},
		{"decode/list/inline", func() { var v lines; _ = listInline.Unmarshal(rec, &v) }},
		{"decode/list/composed", func() { var v lines; _ = listComposed.Unmarshal(rec, &v) }},
	}
	for _, bb := range benches {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				bb.run()
			}
		})
	}
}
