package impl

import (
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/google/go-cmp/cmp"
)

type codeErr int

func (c codeErr) Error() string { return fmt.Sprintf("code %d", int(c)) }

var errSentinel = errors.New("sentinel")

// sliceErr is not comparable: comparing two in interfaces panics.
type sliceErr []string

func (s sliceErr) Error() string { return fmt.Sprint([]string(s)) }

// knownErrs is what a generated file's idemErrors holds for codeErr and
// errSentinel.
type knownErrTypes struct{}

var knownErrs knownErrTypes

func (knownErrTypes) EncodeError(e *Encoder, err error) bool {
	switch x := err.(type) {
	case codeErr:
		e.String("codeErr")
		e.Int(int64(x))
		return true
	}
	switch err {
	case errSentinel:
		e.String("errSentinel")
		return true
	}
	return false
}

func (knownErrTypes) DecodeError(d *Decoder, name string) error {
	switch name {
	case "codeErr":
		return codeErr(d.Int(64))
	case "errSentinel":
		return errSentinel
	}
	return nil
}

type selfWrap struct{}

func (selfWrap) Error() string   { return "self" }
func (s selfWrap) Unwrap() error { return s }

func TestErrorValues(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		// is: errors the replayed value must match with errors.Is.
		is []error
		// same: the replayed value is the stored one (==).
		same bool
	}{
		{name: "nil", err: nil, same: true},
		{name: "known type", err: codeErr(3), is: []error{codeErr(3)}, same: true},
		{name: "sentinel", err: errSentinel, is: []error{errSentinel}, same: true},
		{name: "wrapped known", err: fmt.Errorf("op failed: %w", codeErr(7)), is: []error{codeErr(7)}},
		{name: "wrapped twice", err: fmt.Errorf("outer: %w", fmt.Errorf("inner: %w", errSentinel)), is: []error{errSentinel}},
		{name: "joined", err: errors.Join(codeErr(1), errors.New("other"), errSentinel), is: []error{codeErr(1), errSentinel}},
		{name: "unknown leaf", err: io.ErrUnexpectedEOF},
		{name: "not comparable", err: sliceErr{"b"}},
		{name: "unknown wrapping nothing", err: fmt.Errorf("no wrap")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e Encoder
			e.Error(tc.err, knownErrs)
			e.String("after")
			if e.err != nil {
				t.Fatal(e.err)
			}
			d := Decoder{b: e.buf}
			got := d.Error(knownErrs)
			if after := d.String(); d.err != nil || after != "after" {
				t.Fatalf("read %v, then %q, err %v", got, after, d.err)
			}
			d = Decoder{b: e.buf}
			d.Skip()
			if after := d.String(); d.err != nil || after != "after" {
				t.Fatalf("Skip: then %q, err %v", after, d.err)
			}
			if (got == nil) != (tc.err == nil) {
				t.Fatalf("replayed %v for %v", got, tc.err)
			}
			if tc.err == nil {
				return
			}
			if diff := cmp.Diff(tc.err.Error(), got.Error()); diff != "" {
				t.Errorf("text (-stored +replayed):\n%s", diff)
			}
			for _, target := range tc.is {
				if !errors.Is(got, target) {
					t.Errorf("errors.Is(replayed, %v) = false", target)
				}
			}
			if tc.same && got != tc.err {
				t.Errorf("replayed %#v, want the value %#v itself", got, tc.err)
			}
			var c codeErr
			if errors.As(tc.err, &c) != errors.As(got, &c) {
				t.Errorf("errors.As(codeErr) differs after the replay")
			}
		})
	}
}

// A build that no longer knows an error type reads the error as its
// text; a chain that reaches itself stops at MaxDepth.
func TestErrorValueEdges(t *testing.T) {
	var e Encoder
	e.Error(fmt.Errorf("w: %w", codeErr(2)), knownErrs)
	d := Decoder{b: e.buf}
	got := d.Error(nil)
	if d.err != nil || got.Error() != "w: code 2" || errors.Is(got, codeErr(2)) {
		t.Errorf("without the type list: %#v, %v", got, d.err)
	}
	e = Encoder{}
	e.Error(selfWrap{}, nil)
	if e.err == nil {
		t.Error("a self-wrapping error was encoded without end")
	}
	d = Decoder{b: []byte{kDynamic, dynString, kBytes, 0}}
	if d.Error(nil); d.err == nil {
		t.Error("a string read as an error")
	}
}

// notFound's Error reads its receiver: a nil *notFound panics in it.
type notFound struct{ ID string }

func (e *notFound) Error() string { return "not found: " + e.ID }

// valueErr has a value receiver: a nil *valueErr panics when Go
// dereferences it to call Error.
type valueErr struct{ code int }

func (e valueErr) Error() string { return fmt.Sprint("code ", e.code) }

// wrapNil's Unwrap reads its receiver too.
type wrapNil struct{ next error }

func (e *wrapNil) Error() string { return "wrap: " + e.next.Error() }
func (e *wrapNil) Unwrap() error { return e.next }

type knownNotFound struct{}

func (knownNotFound) EncodeError(e *Encoder, err error) bool {
	if x, ok := err.(*notFound); ok {
		e.String("*notFound")
		if x == nil { // as idemimpl.EncPtr writes it
			e.Nil()
		} else {
			e.Ptr()
			e.String(x.ID)
		}
		return true
	}
	return false
}

func (knownNotFound) DecodeError(d *Decoder, name string) error {
	if name != "*notFound" {
		return nil
	}
	var x *notFound // as idemimpl.DecPtr reads it
	if d.Ptr() {
		x = &notFound{ID: d.String()}
	}
	return x
}

// A result holding a typed nil error (a nil *T in an error) is stored
// without calling the Error method that would panic on it: a known type
// comes back as the same typed nil, an unknown one as the text fmt
// prints for it, "<nil>".
func TestTypedNilErrors(t *testing.T) {
	type replayed struct {
		Text     string
		TypedNil bool // the replayed error is a nil *notFound
	}
	for _, tc := range []struct {
		name  string
		err   error
		known ErrorTypes
		want  replayed
	}{
		{"known pointer type", (*notFound)(nil), knownNotFound{}, replayed{Text: "<nil>", TypedNil: true}},
		{"unknown pointer type", (*notFound)(nil), nil, replayed{Text: "<nil>"}},
		{"unknown, other types known", (*notFound)(nil), knownErrs, replayed{Text: "<nil>"}},
		{"value receiver", (*valueErr)(nil), knownErrs, replayed{Text: "<nil>"}},
		{"wrapper", (*wrapNil)(nil), nil, replayed{Text: "<nil>"}},
		{"wrapping a typed nil", fmt.Errorf("lookup: %w", (*notFound)(nil)), knownNotFound{}, replayed{Text: "lookup: <nil>"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var e Encoder
			e.Error(tc.err, tc.known)
			if e.err != nil {
				t.Fatal(e.err)
			}
			d := Decoder{b: e.buf}
			got := d.Error(tc.known)
			if d.err != nil || got == nil {
				t.Fatalf("read %v, err %v", got, d.err)
			}
			nf, ok := got.(*notFound)
			r := replayed{TypedNil: ok && nf == nil}
			if r.TypedNil {
				r.Text = "<nil>"
			} else {
				r.Text = got.Error()
			}
			if diff := cmp.Diff(tc.want, r); diff != "" {
				t.Errorf("replayed (-want +got):\n%s", diff)
			}
		})
	}
}
