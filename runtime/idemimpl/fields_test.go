package idemimpl

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// decLineFields is decLine over Fields, as idemgen writes it.
func decLineFields(d *Decoder, v *line) {
	for f := range d.Fields() {
		switch string(f) {
		case "SKU":
			v.SKU = d.String()
		case "Qty":
			v.Qty = d.Int(64)
		}
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

// Fields reads what the loop over Struct, More, Field and Skip reads:
// the same value, the same error, the same position, on every prefix of
// a record too.
func TestFieldsAsLoop(t *testing.T) {
	var recs [][]byte
	for _, enc := range []func(*Encoder, *line){encLine, encLineWide} {
		var e Encoder
		enc(&e, &line{"sku", -7})
		recs = append(recs, e.buf, append(append([]byte{}, e.buf...), 0xff))
	}
	for _, rec := range recs {
		for n := 0; n <= len(rec); n++ {
			type out struct {
				V   line
				Off int
				Err string
			}
			run := func(dec func(*Decoder, *line)) out {
				d := Decoder{b: rec[:n]}
				var o out
				dec(&d, &o.V)
				o.Off = d.off
				if d.err != nil {
					o.Err = d.err.Error()
				}
				return o
			}
			if diff := cmp.Diff(run(decLine), run(decLineFields)); diff != "" {
				t.Errorf("record %x: (-loop +Fields):\n%s", rec[:n], diff)
			}
		}
	}
}

func TestFieldsAllocations(t *testing.T) {
	var e Encoder
	encLineWide(&e, &line{"sku", 1})
	rec := e.buf
	var v line
	if n := testing.AllocsPerRun(100, func() {
		d := Decoder{b: rec}
		decLineFields(&d, &v)
	}); n != 1 { // the SKU string
		t.Errorf("decoding over Fields: %v allocations, want 1", n)
	}
}

// Fields against the loop it stands for, in one run:
//
//	go test -run '^$' -bench 'Fields' -count 5 ./runtime/idemimpl
func BenchmarkFields(b *testing.B) {
	var e Encoder
	encLineWide(&e, &line{"sku", 1})
	rec := e.buf
	for _, bb := range []struct {
		name string
		dec  func(*Decoder, *line)
	}{{"loop", decLine}, {"fields", decLineFields}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			var v line
			for b.Loop() {
				d := Decoder{b: rec}
				bb.dec(&d, &v)
			}
		})
	}
}
