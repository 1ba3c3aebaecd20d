package idemtest

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/idemgen/idemgen/runtime/idem"
	"github.com/idemgen/idemgen/runtime/idemimpl"
)

// stringCodec is a generated codec's shape for a string result, so the
// identity case covers records of both codecs.
var stringCodec = idemimpl.TypedCodec[string]{
	Encode: func(e *idemimpl.Encoder, v *string) { e.String(*v) },
	Decode: func(d *idemimpl.Decoder, v *string) { *v = d.String() },
}

// sharedRuns numbers the runs of testFunctionIdentity's cases.
var sharedRuns atomic.Uint64

// testFunctionIdentity: two functions that share a name (and so a key
// space) but differ in signature. A call of the second over the first's
// record, completed or failed (on_failure=lock), in this process or
// another, gets idem.ErrFunctionMismatch: never the first's result, its
// recorded failure or ErrDuplicate, and it does not run. The store's part
// is to keep the record's bytes, identity header included, as written.
func testFunctionIdentity(t *testing.T, e *env) {
	cases := []struct {
		name  string
		codec idem.Codec
		fails bool
		mode  idem.OnDuplicate
	}{
		{"GuardCodec", nil, false, idem.DuplicateReturn},
		{"GeneratedCodec", stringCodec, false, idem.DuplicateReturn},
		{"GeneratedCodecRaise", stringCodec, false, idem.DuplicateRaise},
		{"RecordedFailure", nil, true, idem.DuplicateReturn},
		{"RecordedFailureWait", stringCodec, true, idem.DuplicateWait},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// A name of its own each run: in one process, a second Spec
			// with a signature cannot take a name another Spec has used.
			first := e.spec("Shared" + tc.name + strconv.FormatUint(sharedRuns.Add(1), 10))
			first.Signature, first.Codec, first.OnFailure = "first", tc.codec, idem.FailureLock
			second := *first
			second.Signature, second.OnDuplicate = "second", tc.mode
			call := func(g *idem.Guard, spec *idem.Spec, fn func(context.Context) (string, error)) (string, error) {
				c, k := idemimpl.Begin(g, spec)
				k.Key().String(e.key)
				k.Key().String("k")
				return idem.Do(ctx, c, fn)
			}
			g := idem.NewGuard(e.s)
			_, err := call(g, first, func(context.Context) (string, error) {
				if tc.fails {
					return "", errors.New("first failed")
				}
				return "first's result", nil
			})
			if tc.fails != (err != nil) {
				t.Fatalf("first: %v", err)
			}
			// In this process, second is refused by its name before it
			// reads; a Spec without a signature is not checked in process
			// and reads the record as another process's function would.
			unsigned := second
			unsigned.Signature = ""
			var runs atomic.Int64
			for _, dup := range []struct {
				g    *idem.Guard
				spec *idem.Spec
			}{{g, &second}, {idem.NewGuard(e.s), &unsigned}} {
				v, err := call(dup.g, dup.spec, func(context.Context) (string, error) { runs.Add(1); return "second ran", nil })
				if !errors.Is(err, idem.ErrFunctionMismatch) || !errors.Is(err, idem.ErrResultIncompatible) {
					t.Errorf("second: %q, %v; want ErrFunctionMismatch", v, err)
				}
				var rec *idem.RecordedError
				if v != "" || errors.As(err, &rec) || errors.Is(err, idem.ErrDuplicate) {
					t.Errorf("second was answered from the first's record: %q, %v", v, err)
				}
			}
			if n := runs.Load(); n != 0 {
				t.Errorf("second ran %d times over the first's record, want 0", n)
			}
			// The first still replays its own record.
			v, err := call(idem.NewGuard(e.s), first, func(context.Context) (string, error) { return "first ran again", nil })
			if tc.fails {
				var rec *idem.RecordedError
				if !errors.As(err, &rec) {
					t.Errorf("first's replay: %v, want its *RecordedError", err)
				}
			} else if err != nil || v != "first's result" {
				t.Errorf("first's replay: %q, %v; want its result", v, err)
			}
		})
	}
}
