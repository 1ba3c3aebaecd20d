package generator

import "go/types"

// A function whose result (before the error) is a stream is wrapped by
// idem.Stream: the wrapper ranges the function's stream and records each
// item with the codec of the item type, as a result is recorded. Which
// results are streams, and what their wrappers return, is in
// docs/GENERATOR.md ("Streams").

// streamOf is t as a stream; nil and why not when t looks like one (a
// sequence, a channel) but does not qualify; nil and "" when it does not
// look like one at all.
func streamOf(t types.Type) (*stream, string) {
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "io" {
		if name := n.Obj().Name(); name == "Reader" || name == "ReadCloser" {
			return &stream{kind: streamReader, item: types.NewSlice(types.Universe.Lookup("byte").Type())}, ""
		}
	}
	if n, ok := types.Unalias(t).(*types.Named); ok && n.Obj().Pkg() != nil && n.Obj().Pkg().Path() == "iter" {
		args := n.TypeArgs()
		switch {
		case n.Obj().Name() == "Seq" && args.Len() == 1:
			return &stream{kind: streamSeq, item: args.At(0)}, ""
		case n.Obj().Name() == "Seq2" && args.Len() == 2 && isError(args.At(1)):
			return &stream{kind: streamSeq2, item: args.At(0)}, ""
		case n.Obj().Name() == "Seq2":
			return nil, "an iter.Seq2 streams only when its second type is error (iter.Seq2[T, error])"
		}
	}
	if c, ok := types.Unalias(t).(*types.Chan); ok {
		if c.Dir() != types.RecvOnly {
			return nil, "a channel streams only when it is receive-only (<-chan T): the function must own its sending"
		}
		return &stream{kind: streamSeq, item: c.Elem()}, ""
	}
	if item, ok := sdkStream(t); ok {
		return &stream{kind: streamSDK, item: item}, ""
	}
	return nil, ""
}

// sdkStream reports whether t has the methods of an SDK's stream (openai-go
// and anthropic-sdk-go's *ssestream.Stream[T]): Next() bool, Current() T,
// Err() error and Close() error; T is the item type.
func sdkStream(t types.Type) (types.Type, bool) {
	ms := types.NewMethodSet(t)
	sig := func(name string) *types.Signature {
		sel := ms.Lookup(nil, name)
		if sel == nil || !sel.Obj().Exported() {
			return nil
		}
		s, _ := sel.Type().(*types.Signature)
		if s == nil || s.Params().Len() != 0 || s.Results().Len() != 1 {
			return nil
		}
		return s
	}
	next, cur, errM, closeM := sig("Next"), sig("Current"), sig("Err"), sig("Close")
	if next == nil || cur == nil || errM == nil || closeM == nil {
		return nil, false
	}
	if b, ok := next.Results().At(0).Type().(*types.Basic); !ok || b.Kind() != types.Bool {
		return nil, false
	}
	if !isError(errM.Results().At(0).Type()) || !isError(closeM.Results().At(0).Type()) {
		return nil, false
	}
	return cur.Results().At(0).Type(), true
}

func isError(t types.Type) bool {
	return types.Identical(t, types.Universe.Lookup("error").Type())
}

// checkStream finds whether x's one result is a stream; if it is, x's
// result becomes the item type, which the codec, the storage checks and
// omit= read as they read a result.
func (pi *pkgInfo) checkStream(x *fn, what string) bool {
	if len(x.result) != 1 {
		return true
	}
	s, why := streamOf(x.result[0])
	if s == nil && why == "" {
		return true
	}
	if s == nil {
		pi.d.add(pi.fset.Position(x.pos), "%s: result 1 (%s) is not a stream: %s", what, pi.typeString(x.result[0]), why)
		return false
	}
	if x.step || x.inner != "" || (x.recv != nil && types.IsInterface(x.recv.Type())) || x.sig.TypeParams().Len() > 0 {
		pi.d.add(pi.fset.Position(x.pos), "%s: result 1 (%s) is a stream: streams are wrapped for non-generic functions and methods, not for steps, interface methods or generic functions", what, pi.typeString(x.result[0]))
		return false
	}
	s.of = x.result[0]
	x.stream = s
	x.result[0] = s.item
	return true
}
