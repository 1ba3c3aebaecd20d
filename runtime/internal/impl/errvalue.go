package impl

import (
	"fmt"
	"reflect"
)

// ErrorTypes are the error types and sentinel errors that a generated
// codec restores as themselves when a result holds them in a value of
// type error: a generated file implements it (idemErrors) for those of
// the packages its results come from.
type ErrorTypes interface {
	// EncodeError writes err's name and value if err is one of them.
	EncodeError(e *Encoder, err error) bool
	// DecodeError reads the value of the error named name; nil if name
	// is not one of them (any more).
	DecodeError(d *Decoder, name string) error
}

// How an error value is stored: its text, then one of these.
const (
	errText  = iota // the text alone: another type, restored as its text
	errKnown        // one of the ErrorTypes: its name, then its value
	errWraps        // Unwrap() error: the error it wraps follows
	errJoins        // Unwrap() []error: the list of errors it joins follows
)

// Error writes an error value of a result. Errors of the types and
// sentinels known lists come back as themselves; any other comes back
// with the same text and the same chain: what it wraps (Unwrap) is
// stored too, so errors.Is and errors.As still find a known error inside
// a fmt.Errorf("%w: …") wrapper after a replay. Only the type of an
// unknown error is lost, and the generated doc line says so.
func (e *Encoder) Error(err error, known ErrorTypes) {
	if !e.enterValue(err == nil) {
		return
	}
	defer e.Leave()
	e.buf = append(e.buf, kDynamic, dynError)
	mark := len(e.buf)
	text, typedNil := errorText(err)
	if known != nil {
		at := e.List(4) // text, errKnown, name, value
		e.String(text)
		e.Uint(errKnown)
		if encodeKnown(e, known, err) {
			e.End(at)
			return
		}
		e.buf = e.buf[:mark]
		e.err = nil
	}
	switch x := err.(type) {
	case interface{ Unwrap() error }:
		if typedNil {
			break // its Unwrap would read through the nil pointer too
		}
		if next := x.Unwrap(); next != nil {
			at := e.List(3)
			e.String(text)
			e.Uint(errWraps)
			e.Error(next, known)
			e.End(at)
			return
		}
	case interface{ Unwrap() []error }:
		if typedNil {
			break
		}
		errs := x.Unwrap()
		at := e.List(3)
		e.String(text)
		e.Uint(errJoins)
		l := e.List(len(errs))
		for _, next := range errs {
			e.Error(next, known)
		}
		e.End(l)
		e.End(at)
		return
	}
	at := e.List(2)
	e.String(text)
	e.Uint(errText)
	e.End(at)
}

// errorText is err's text. A nil pointer in err (a typed nil error) whose
// Error method panics on it reads as fmt prints it, "<nil>", and typedNil
// says err is one: a result may hold one (Err: (*NotFound)(nil)), and
// encoding it must neither panic nor store it as another error.
func errorText(err error) (text string, typedNil bool) {
	if v := reflect.ValueOf(err); v.Kind() == reflect.Pointer && v.IsNil() {
		typedNil = true
		defer func() {
			if recover() != nil {
				text = "<nil>"
			}
		}()
	}
	return err.Error(), typedNil
}

// Error reads an error value Encoder.Error wrote.
func (d *Decoder) Error(known ErrorTypes) error {
	if d.Nil() || !d.take(kDynamic) {
		return nil
	}
	if code := d.fixed(1); d.err != nil || code[0] != dynError {
		if d.err == nil {
			d.mismatch(kDynamic, "an error")
		}
		return nil
	}
	if !d.Enter() {
		return nil
	}
	defer d.Leave()
	n := d.List()
	text := d.String()
	how := d.Uint(8)
	if d.err != nil {
		return nil
	}
	switch {
	case how == errText && n == 2:
		return &replayedError{text}
	case how == errKnown && n == 4:
		name := d.String()
		if known != nil && d.err == nil {
			if err := known.DecodeError(d, name); err != nil {
				return err
			}
		}
		d.Skip() // a type this build does not list: its text
		return &replayedError{text}
	case how == errWraps && n == 3:
		return &replayedWrap{replayedError{text}, d.Error(known)}
	case how == errJoins && n == 3:
		errs := make([]error, d.List())
		for i := range errs {
			errs[i] = d.Error(known)
		}
		return &replayedJoin{replayedError{text}, errs}
	}
	d.corrupt(fmt.Sprintf("error stored as %d of %d values", how, n))
	return nil
}

// replayedError is an error of a replayed result whose type is not
// restored: its text.
type replayedError struct{ text string }

func (e *replayedError) Error() string { return e.text }

// replayedWrap is a replayed error that wrapped another.
type replayedWrap struct {
	replayedError
	next error
}

func (e *replayedWrap) Unwrap() error { return e.next }

// replayedJoin is a replayed error that joined several.
type replayedJoin struct {
	replayedError
	errs []error
}

func (e *replayedJoin) Unwrap() []error { return e.errs }

// encodeKnown runs known.EncodeError. A sentinel comparison panics when
// err and the sentinel share a dynamic type that is not comparable: err
// is then not that sentinel, and is stored by its text and chain.
func encodeKnown(e *Encoder, known ErrorTypes, err error) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	return known.EncodeError(e, err) && e.err == nil
}
