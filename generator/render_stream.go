package generator

import (
	"go/types"

	"github.com/dave/jennifer/jen"
)

// streamSignature is the wrapper's signature for a streamed result: the
// function's parameters, then (iter.Seq2[T, error], error). Every error,
// the claim's and the function's, comes in the sequence: the error result
// is nil, and is there so that a function returning (iter.Seq2[T, error],
// error) has a wrapper of its own signature.
// An io.Reader's wrapper returns (io.ReadCloser, error) instead: a Read
// returns the error that ended the stream.
func (e *fileWriter) streamSignature(x *fn, names []string) *jen.Statement {
	params := types.NewSignatureType(nil, nil, nil, x.sig.Params(), nil, x.sig.Variadic())
	result := e.streamSeq(x)
	if x.stream.kind == streamReader {
		result = e.qual(ioPkg, "ReadCloser")
	}
	return jen.Add(e.signature(params, names)).Params(result, jen.Error())
}

// streamSeq is iter.Seq2[T, error], T the item type.
func (e *fileWriter) streamSeq(x *fn) *jen.Statement {
	return e.qual(iterPkg, "Seq2").Types(e.typ(x.stream.item), jen.Error())
}

// streamDoc says what the wrapper of a streamed result returns, naming
// the function's result where the wrapper returns another type.
func (e *fileWriter) streamDoc(x *fn) string {
	switch {
	case x.stream == nil:
		return ""
	case x.stream.kind == streamReader:
		return " Its bytes stream as the function's reader returns them, and replay to duplicates; Read returns the error that ended the stream (the error result is nil)."
	}
	doc := " Its items stream as the function yields them, and replay to duplicates; an error ends the sequence (the error result is nil)."
	if x.stream.kind != streamSeq2 {
		doc += " The function's " + e.pi.typeString(x.stream.of) + " is returned as an iter.Seq2, which carries the errors."
	}
	return doc
}

// streamCall is the wrapper's body for a streamed result: idem.Stream
// runs the function at most once per key, and its fn yields what the
// function's stream yields.
func (e *fileWriter) streamCall(w *wrap) []jen.Code {
	x, ns := w.x, w.ns
	ctxArg := jen.Add(e.qual(contextPkg, "Background")).Call()
	ctxParam := jen.Add(e.qual(contextPkg, "Context"))
	if x.ctx >= 0 {
		ctxArg = jen.Id(x.params[x.ctx].name)
		ctxParam = jen.Id(x.params[x.ctx].name).Add(e.qual(contextPkg, "Context"))
	}
	yield, s, v, err := ns.get("yield"), ns.get("s"), ns.get("v"), ns.get("err")
	body := []jen.Code{
		jen.List(jen.Id(s), jen.Id(err)).Op(":=").Add(e.innerCall(w)),
		jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Id(err))),
	}
	stop := jen.If(jen.Op("!").Id(yield).Call(jen.Id(v))).Block(jen.Return(jen.Nil()))
	switch x.stream.kind {
	case streamSeq2:
		body = append(body, jen.For(jen.List(jen.Id(v), jen.Id(err)).Op(":=").Range().Id(s)).Block(
			jen.If(jen.Id(err).Op("!=").Nil()).Block(jen.Return(jen.Id(err))),
			stop,
		), jen.Return(jen.Nil()))
	case streamSeq:
		body = append(body, jen.For(jen.Id(v).Op(":=").Range().Id(s)).Block(stop), jen.Return(jen.Nil()))
	case streamSDK:
		// Close's error is dropped: the items were read, and Err says
		// whether the stream ended well.
		body = append(body,
			jen.Defer().Id(s).Dot("Close").Call(),
			jen.For(jen.Id(s).Dot("Next").Call()).Block(
				jen.If(jen.Op("!").Id(yield).Call(jen.Id(s).Dot("Current").Call())).Block(jen.Return(jen.Nil())),
			),
			jen.Return(jen.Id(s).Dot("Err").Call()))
	case streamReader:
		body = append(body, jen.Return(e.qual(implPkg, "ReadChunks").Call(jen.Id(s), jen.Id(yield))))
	}
	fn := jen.Func().Params(ctxParam, jen.Id(yield).Func().Params(w.resultT).Bool()).Error().Block(body...)
	seq := e.qual(idemPkg, "Stream").Call(ctxArg, e.beginCall(w), fn)
	if x.stream.kind == streamReader {
		seq = e.qual(implPkg, "StreamReader").Call(seq)
	}
	return []jen.Code{jen.Return(seq, jen.Nil())}
}

var (
	iterPkg = types.NewPackage("iter", "iter")
	ioPkg   = types.NewPackage("io", "io")
)
