package generator

import (
	"github.com/dave/jennifer/jen"
)

// Values of type error in results (kafka-go's Response.Error, a batch's
// per-item errors) are stored by the runtime with their text and their
// chain (what they wrap), so errors.Is and errors.As find what they found
// before. The error types and sentinel errors of the packages the results
// come from are restored as themselves: the generated file lists them in
// one type, idemErrors, that implements idemimpl.ErrorTypes. Any other error
// comes back as its text and chain, and the wrapper's doc line says so.

// errorTypesDecl is the declaration of x, the file's idemErrors (none if
// nil).
func (e *fileWriter) errorTypesDecl(x *errTypes) []jen.Code {
	if x == nil {
		return nil
	}
	encT, decT := e.qual(implPkg, "Encoder"), e.qual(implPkg, "Decoder")
	var enc []jen.Code
	if len(x.encode) > 0 {
		sw := jen.Switch(jen.Id("err").Assert(jen.Type()))
		if x.usesX {
			sw = jen.Switch(jen.Id("x").Op(":=").Id("err").Assert(jen.Type()))
		}
		enc = append(enc, sw.Block(x.encode...))
	}
	if x.sentinels != nil {
		enc = append(enc, x.sentinels)
	}
	enc = append(enc, jen.Return(jen.False()))
	dec := []jen.Code{jen.Return(jen.Nil())}
	if len(x.decode) > 0 {
		dec = append([]jen.Code{jen.Switch(jen.Id("name")).Block(x.decode...)}, dec...)
	}
	return []jen.Code{
		jen.Commentf("%s restores the errors of its cases in results as themselves; others come back as their text and chain.", x.name).Line().
			Type().Id(x.name).Struct(),
		jen.Func().Params(jen.Id(x.name)).Id("EncodeError").Params(jen.Id("e").Op("*").Add(encT), jen.Id("err").Error()).Bool().Block(enc...),
		jen.Func().Params(jen.Id(x.name)).Id("DecodeError").Params(jen.Id("d").Op("*").Add(decT), jen.Id("name").String()).Error().Block(dec...),
	}
}
