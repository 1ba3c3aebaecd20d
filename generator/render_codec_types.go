package generator

import (
	"go/types"
	"strconv"

	"github.com/dave/jennifer/jen"
)

// codecGen writes the codec of one wrapper's result value, or the helpers
// of a type, from what the analysis decided can be stored.
type codecGen struct {
	e    *emitter
	spec string      // the Spec's base name, for helpers specialised by omit=
	last encoderCall // for fieldEnc
	// decoders are the uses of d since fieldDec began counting them.
	decoders []*jen.Statement
}

var (
	slicesPkg = types.NewPackage("slices", "slices")
	mapsPkg   = types.NewPackage("maps", "maps")
)

// fnScope hands out the local names of one generated function.
type fnScope map[string]int

func (s fnScope) get(base string) string {
	s[base]++
	if n := s[base]; n > 1 {
		return base + strconv.Itoa(n)
	}
	return base
}

// vx is a value in generated code: an addressable expression, or *ptr.
type vx struct {
	x   jen.Code // the expression (ptr == nil)
	ptr jen.Code // v is *ptr
	// bare is ptr without the parentheses a selector needs ((*p).F), for
	// passing the pointer on: f(*p), not f((*p)).
	bare jen.Code
}

// sel is v as the operand of a selector or index: (*p).F needs the parens
// only for indexing; a selector auto-dereferences.
func (v vx) sel(field bool) *jen.Statement {
	if v.ptr != nil {
		if field {
			return jen.Add(v.ptr)
		}
		return jen.Parens(jen.Op("*").Add(v.ptr))
	}
	return jen.Add(v.x)
}

// val is v as an operand or assignment target.
func (v vx) val() *jen.Statement {
	if v.ptr != nil {
		return jen.Op("*").Add(v.ptr)
	}
	return jen.Add(v.x)
}

// addr is &v.
func (v vx) addr() *jen.Statement {
	if v.bare != nil {
		return jen.Add(v.bare)
	}
	if v.ptr != nil {
		return jen.Add(v.ptr)
	}
	return jen.Op("&").Add(v.x)
}

func expr(c jen.Code) vx { return vx{x: c} }

// elem is *v, for v of pointer type.
func (v vx) elem() vx {
	if v.ptr != nil {
		return vx{ptr: jen.Parens(jen.Op("*").Add(v.ptr)), bare: jen.Op("*").Add(v.ptr)}
	}
	return vx{ptr: v.x}
}

func deref(c jen.Code) vx { return vx{ptr: c} }

// encoderCall is the statement encBy wrote last, and how to write it on
// another Encoder expression.
type encoderCall struct {
	stmt *jen.Statement
	call func(e *jen.Statement) *jen.Statement
}

// eCall and dCall call a method of the Encoder e and the Decoder d.
func eCall(m string, args ...jen.Code) *jen.Statement { return jen.Id("e").Dot(m).Call(args...) }

var urlPkg = types.NewPackage("net/url", "url")
