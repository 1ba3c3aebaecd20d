package impl

import (
	"errors"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decLineLoop reads a line by name the long way, one field after another,
// skipping the ones it does not know: what Struct, Field and End must
// read.
func decLineLoop(d *Decoder, v *line) {
	end := d.open(kStruct)
	for d.err == nil && d.off < end {
		n := d.uvarint()
		if d.err != nil || n > uint64(end-d.off) {
			d.corrupt("bad field name")
			return
		}
		name := string(d.b[d.off : d.off+int(n)])
		d.off += int(n)
		switch name {
		case "SKU":
			v.SKU = d.String()
		case "Qty":
			v.Qty = d.Int(64)
		default:
			d.Skip()
		}
	}
	if d.err == nil && d.off > end {
		d.corrupt("field past the end of its struct")
	}
}

// encLineWide stores a line with fields the type no longer has around
// its own: a decoder skips them.
func encLineWide(e *Encoder, v *line) {
	at := e.Struct()
	e.Field("Gone").String("x")
	e.Field("SKU").String(v.SKU)
	e.Field("Nested")
	in := e.Struct()
	e.Field("A").Int(1)
	e.End(in)
	e.Field("Qty").Int(v.Qty)
	e.Field("Last").Nil()
	e.End(at)
}

// encLineSwapped stores a line's fields in the other order.
func encLineSwapped(e *Encoder, v *line) {
	at := e.Struct()
	e.Field("Qty").Int(v.Qty)
	e.Field("SKU").String(v.SKU)
	e.End(at)
}

// encLineOld stores a line written before Qty was added.
func encLineOld(e *Encoder, v *line) {
	at := e.Struct()
	e.Field("SKU").String(v.SKU)
	e.End(at)
}

// Field lookups read what a by-name loop reads: the same value and
// position when the record is whole, an error when it is not, on every
// prefix of a record and with a byte of garbage after it, whatever order
// the fields were written in and whichever fields the record lacks or
// adds.
func TestFieldLookupAsLoop(t *testing.T) {
	var recs [][]byte
	for _, enc := range []func(*Encoder, *line){encLine, encLineWide, encLineSwapped, encLineOld} {
		var e Encoder
		enc(&e, &line{"sku", -7})
		recs = append(recs, e.buf, append(append([]byte{}, e.buf...), 0xff))
	}
	for _, rec := range recs {
		for n := 0; n <= len(rec); n++ {
			type out struct {
				V   line
				Off int
				Err bool
			}
			run := func(dec func(*Decoder, *line)) out {
				d := Decoder{b: rec[:n]}
				var o out
				dec(&d, &o.V)
				o.Off, o.Err = d.off, d.err != nil
				if o.Err {
					o.V, o.Off = line{}, 0 // what a failed read left is never used
				}
				return o
			}
			if diff := cmp.Diff(run(decLineLoop), run(decLine)); diff != "" {
				t.Errorf("record %x: (-loop +lookup):\n%s", rec[:n], diff)
			}
		}
	}
}

// order is a struct of every kind of value, to read from a record that
// holds none of its fields: each reads as its zero value, and the field
// after it still reads.
type order struct {
	Note  *string
	Lines []line
	Tags  map[string]string
	Pair  [2]int64
	Inner line
	Addr  netip.Addr
	Any   any
	Err   error
	Last  string
}

func decOrder(d *Decoder, v *order) {
	s := d.Struct()
	DecPtr(d.Field(s, "Note"), &v.Note, DecString)
	DecList(d.Field(s, "Lines"), &v.Lines, decLine)
	DecMap(d.Field(s, "Tags"), &v.Tags, (*Decoder).String, (*Decoder).String)
	if d.Field(s, "Pair").Array(2) {
		for i := range v.Pair {
			v.Pair[i] = d.Int(64)
		}
	}
	decLine(d.Field(s, "Inner"), &v.Inner)
	d.Field(s, "Addr").Unmarshaled(v.Addr.UnmarshalText(d.Marshaled()))
	v.Any = d.Field(s, "Any").Any()
	v.Err = d.Field(s, "Err").Error(nil)
	v.Last = d.Field(s, "Last").String()
	d.End(s)
}

func TestFieldAbsentReadsZero(t *testing.T) {
	var e Encoder
	at := e.List(2)
	for _, last := range []string{"first", "second"} {
		in := e.Struct()
		e.Field("Last").String(last)
		e.End(in)
	}
	e.End(at)
	var got []order
	d := Decoder{b: e.buf}
	DecList(&d, &got, decOrder)
	if d.err != nil {
		t.Fatal(d.err)
	}
	want := []order{{Last: "first"}, {Last: "second"}}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b error) bool { return errors.Is(a, b) }), cmp.Comparer(func(a, b netip.Addr) bool { return a == b })); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if d.off != len(e.buf) {
		t.Errorf("read %d of %d bytes", d.off, len(e.buf))
	}
}

// Present tells a field the record holds from one it does not, for
// values whose absence means something (an unset password).
func TestFieldPresent(t *testing.T) {
	var e Encoder
	at := e.Struct()
	e.Field("Set").String("")
	e.End(at)
	d := Decoder{b: e.buf}
	s := d.Struct()
	set := d.Field(s, "Set").Present()
	_ = d.String()
	unset := d.Field(s, "Unset").Present()
	_ = d.String()
	d.End(s)
	if !set || unset || d.err != nil {
		t.Errorf("Present: set %v, unset %v, err %v; want true, false, nil", set, unset, d.err)
	}
}

func TestFieldAllocations(t *testing.T) {
	var e Encoder
	encLineWide(&e, &line{"sku", 1})
	rec := e.buf
	var v line
	if n := testing.AllocsPerRun(100, func() {
		d := Decoder{b: rec}
		decLine(&d, &v)
	}); n != 1 { // the SKU string
		t.Errorf("decoding by Field: %v allocations, want 1", n)
	}
}

// Field lookups against the by-name loop, in one run:
//
//	go test -run '^$' -bench 'FieldLookup' -count 5 ./runtime/internal/impl
func BenchmarkFieldLookup(b *testing.B) {
	for _, rb := range []struct {
		name string
		enc  func(*Encoder, *line)
	}{{"in-order", encLine}, {"other-fields", encLineWide}, {"swapped", encLineSwapped}} {
		var e Encoder
		rb.enc(&e, &line{"sku", 1})
		rec := e.buf
		for _, bb := range []struct {
			name string
			dec  func(*Decoder, *line)
		}{{"loop", decLineLoop}, {"lookup", decLine}} {
			b.Run(rb.name+"/"+bb.name, func(b *testing.B) {
				b.ReportAllocs()
				var v line
				for b.Loop() {
					d := Decoder{b: rec}
					bb.dec(&d, &v)
				}
			})
		}
	}
}
