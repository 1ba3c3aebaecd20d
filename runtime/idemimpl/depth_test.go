package idemimpl_test

import (
	"errors"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// chain is a recursive result type, coded as idemgen codes one: its
// helpers guard each level with Enter and Leave.
type chain struct {
	N    int64
	Next *chain
}

func encChain(e *idemimpl.Encoder, v *chain) {
	if !e.Enter() {
		return
	}
	defer e.Leave()
	e.Int(v.N)
	if v.Next == nil {
		e.Nil()
		return
	}
	e.Ptr()
	encChain(e, v.Next)
}

func decChain(d *idemimpl.Decoder, v *chain) {
	if !d.Enter() {
		return
	}
	defer d.Leave()
	v.N = d.Int(64)
	if d.Ptr() {
		v.Next = new(chain)
		decChain(d, v.Next)
	}
}

var chainCodec = idemimpl.TypedCodec[*chain]{
	Encode: func(e *idemimpl.Encoder, v **chain) { encChain(e, *v) },
	Decode: func(d *idemimpl.Decoder, v **chain) { *v = new(chain); decChain(d, *v) },
}

func makeChain(n int) *chain {
	var head *chain
	for i := range n {
		head = &chain{N: int64(i), Next: head}
	}
	return head
}

// TestRecursionDepth: a cyclic result is not encodable (it overflowed
// the stack, a crash after the function ran), a chain at MaxDepth
// round-trips, one level more is refused, and a record nested deeper
// than MaxDepth decodes to ErrCorruptRecord instead of a stack overflow.
func TestRecursionDepth(t *testing.T) {
	cyclic := &chain{N: 1}
	cyclic.Next = cyclic
	for _, tc := range []struct {
		name    string
		v       *chain
		wantErr bool
	}{
		{"cyclic", cyclic, true},
		{"at the bound", makeChain(idemimpl.MaxDepth), false},
		{"one past the bound", makeChain(idemimpl.MaxDepth + 1), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data, err := chainCodec.Marshal(tc.v)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Marshal = %d bytes, nil; want an error", len(data))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got *chain
			if err := chainCodec.Unmarshal(data, &got); err != nil {
				t.Fatal(err)
			}
			n := 0
			for c := got; c != nil; c = c.Next {
				n++
			}
			if n != idemimpl.MaxDepth {
				t.Fatalf("decoded %d levels, want %d", n, idemimpl.MaxDepth)
			}
		})
	}

	// A record one level deeper than the encoder writes, built from the
	// bytes of one level: int 0 then a pointer marker, MaxDepth times,
	// and a last int 0 with nil.
	one, err := chainCodec.Marshal(&chain{})                // marker, version, int 0, nil
	two, err2 := chainCodec.Marshal(&chain{Next: &chain{}}) // marker, version, int 0, ptr, int 0, nil
	if err != nil || err2 != nil {
		t.Fatal(err, err2)
	}
	level := two[2:len(one)] // int 0, ptr
	deep := append([]byte(nil), one[:2]...)
	for range idemimpl.MaxDepth {
		deep = append(deep, level...)
	}
	deep = append(deep, one[2:]...)
	var got *chain
	if err := chainCodec.Unmarshal(deep, &got); !errors.Is(err, idemimpl.ErrCorruptRecord) {
		t.Fatalf("Unmarshal of %d levels = %v; want ErrCorruptRecord", idemimpl.MaxDepth+1, err)
	}
	// The same bytes are a well-formed record of MaxDepth+1 levels to a
	// decoder without the bound: the refusal above is the bound's.
	n := 0
	err = idemimpl.DecodeRecord(deep, func(d *idemimpl.Decoder) {
		for {
			d.Int(64)
			n++
			if !d.Ptr() {
				return
			}
		}
	})
	if err != nil || n != idemimpl.MaxDepth+1 {
		t.Fatalf("unbounded decode: %d levels, %v; want %d, nil", n, err, idemimpl.MaxDepth+1)
	}
}
