package codecbench

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// record encodes what an older shape of Order wrote, by hand.
func record(t *testing.T, fields func(e *idemimpl.Encoder)) []byte {
	t.Helper()
	old := idemimpl.TypedCodec[struct{}]{Encode: func(e *idemimpl.Encoder, _ *struct{}) {
		e.Ptr()
		at := e.Struct()
		fields(e)
		e.End(at)
	}}
	data, err := old.Marshal(struct{}{})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// The generated decoder reads records of older shapes of its type: a
// field it does not know (removed since) is skipped, a field the record
// lacks (added since) stays zero, an integer that widened still fits; a
// field whose type changed is idem.ErrResultIncompatible.
func TestGeneratedCodecUpgrades(t *testing.T) {
	data := record(t, func(e *idemimpl.Encoder) {
		e.Field("ID")
		e.String("o1")
		e.Field("Removed")
		e.String("gone")
		e.Field("Customer")
		at := e.Struct()
		e.Field("Name")
		e.String("Ada")
		e.Field("Phone") // removed from Customer
		e.String("555")
		e.End(at)
		e.Field("Items") // stored as an unsigned integer: still fits int
		e.Uint(3)
	})
	var got *Order
	if err := idemSpecPlace.Codec.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := &Order{ID: "o1", Customer: Customer{Name: "Ada"}, Items: 3}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("older record (-want +got):\n%s", diff)
	}

	retyped := record(t, func(e *idemimpl.Encoder) {
		e.Field("Total")
		e.String("50.73") // Total is an int64 now
	})
	if err := idemSpecPlace.Codec.Unmarshal(retyped, &got); !errors.Is(err, idem.ErrResultIncompatible) {
		t.Errorf("retyped field: %v, want ErrResultIncompatible", err)
	}
	narrowed := record(t, func(e *idemimpl.Encoder) {
		e.Field("Lines")
		at := e.List(1)
		l := e.Struct()
		e.Field("Qty")
		e.Int(1 << 40) // Qty is an int32 now
		e.End(l)
		e.End(at)
	})
	if err := idemSpecPlace.Codec.Unmarshal(narrowed, &got); !errors.Is(err, idem.ErrResultIncompatible) {
		t.Errorf("value that no longer fits: %v, want ErrResultIncompatible", err)
	}
	if err := idemSpecPlace.Codec.Unmarshal(append(data[:len(data):len(data)], 0), &got); !errors.Is(err, idem.ErrCorruptRecord) {
		t.Errorf("trailing byte: %v, want ErrCorruptRecord", err)
	}
}
