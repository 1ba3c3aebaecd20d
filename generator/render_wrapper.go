package generator

import (
	"fmt"
	"go/token"
	"go/types"
	"strings"

	"github.com/dave/jennifer/jen"
)

// wrapper emits the declarations of one function in reading order: the
// wrapper method, its Key helper, the begin helper both use, then what
// they refer to: the Spec, the signature self-check, the result struct and
// codec. The pieces are built in another order, the one their names are
// reserved in.
func (e *emitter) wrapper(x *fn, typeName, field string, hn helperNames) []jen.Code {
	w := newWrap(x, typeName, field, hn)
	material, keyOK := e.keyMaterial(w)
	fields := e.specFields(w)
	result := e.resultStruct(w)
	codec, codecDoc, codecOK := e.resultCodec(x, w.specBase, w.resultT)
	if !codecOK || !keyOK || (dropWrapper != nil && dropWrapper(x)) {
		return nil
	}
	e.signatureCheck(w)
	e.beginParams(w)
	out := []jen.Code{e.wrapperMethod(w, codecDoc), e.keyMethod(w), e.begin(w, material), e.spec(w, fields, codec)}
	if result != nil {
		out = append(out, result)
	}
	e.pi.emitted[x] = true
	return out
}

// keyMaterial is what begin writes after starting the call: the key, the
// payload fingerprint, the order. The results are checked even when the
// key is refused: one run reports (and advises) both, so following its
// advice converges.
func (e *emitter) keyMaterial(w *wrap) ([]jen.Code, bool) {
	x := w.x
	keys, payload, ok := e.keyStatements(x, w.k, w.ns)
	if fnTypeParams(x).Len() > 0 {
		keys = append(e.typeArgKeys(x, w.k), keys...) // the type arguments are part of the key
	}
	order, orderOK := e.orderStatements(x, w.k, w.ns)
	return append(append(keys, payload...), order...), ok && orderOK
}

// specFields are the fields of the Spec, but its codec. A field the
// directive leaves at its default is left out: the runtime reads zero as
// the default, and the wrapper's doc line says what takes effect.
func (e *fileWriter) specFields(w *wrap) []jen.Code {
	x, o := w.x, w.x.opts
	w.specVar = e.global("idemSpec" + w.specBase)
	kv := func(k string, v jen.Code) jen.Code { return jen.Id(k).Op(":").Add(v) }
	fields := []jen.Code{
		kv("Name", jen.Lit(w.specName)),
		kv("Signature", jen.Lit(signature(w.specName, o.version, x.sig))),
	}
	if o.ttl > 0 {
		fields = append(fields, kv("TTL", e.duration(o.ttl)))
	}
	if o.lease > 0 {
		fields = append(fields, kv("Lease", e.duration(o.lease)))
	}
	if dup := map[string]string{"raise": "DuplicateRaise", "wait": "DuplicateWait"}[o.onDuplicate]; dup != "" {
		fields = append(fields, kv("OnDuplicate", e.qual(idemPkg, dup)))
	}
	if o.onFailure == "lock" {
		fields = append(fields, kv("OnFailure", e.qual(idemPkg, "FailureLock")))
	}
	if o.wait > 0 {
		fields = append(fields, kv("Wait", e.duration(o.wait)))
	}
	if o.version > 0 {
		fields = append(fields, kv("Version", jen.Lit(o.version)))
	}
	if o.orderSet {
		fields = append(fields, kv("Ordered", jen.True()))
		if o.grace > 0 {
			fields = append(fields, kv("Grace", e.duration(o.grace)))
		}
	}
	if o.maxResult > 0 {
		fields = append(fields, kv("MaxResult", jen.Lit(o.maxResult)))
	}
	return fields
}

// spec emits the Spec, one field per line, its result codec last.
func (e *fileWriter) spec(w *wrap, fields []jen.Code, codec jen.Code) jen.Code {
	if codec != nil {
		fields = append(fields, jen.Id("Codec").Op(":").Add(codec))
	}
	return jen.Var().Id(w.specVar).Op("=").Op("&").Add(e.qual(idemPkg, "Spec")).
		Custom(jen.Options{Open: "{", Close: "}", Separator: ",", Multi: true}, fields...)
}

// signatureCheck adds the self-check to the file's checks: a changed
// signature fails the build there, naming the function.
func (e *fileWriter) signatureCheck(w *wrap) {
	x, target := w.x, w.x.obj.Name()
	var fnRef *jen.Statement
	checkSig := x.sig
	if x.recv != nil {
		recvT := recvPointer(x) // *T, or *Repo[T]
		fnRef = jen.Parens(e.typ(recvT)).Dot(target)
		if x.inner != "" {
			recvT, fnRef = x.recv.Type(), jen.Id(x.recv.Name()).Dot(target) // Carrier.Book
		}
		vars := []*types.Var{types.NewParam(token.NoPos, nil, "", recvT)}
		for i := 0; i < x.sig.Params().Len(); i++ {
			vars = append(vars, x.sig.Params().At(i))
		}
		checkSig = types.NewSignatureType(nil, nil, nil, types.NewTuple(vars...), x.sig.Results(), x.sig.Variadic())
	} else {
		fnRef = e.qual(x.obj.Pkg(), target)
	}
	if fnTypeParams(x).Len() > 0 {
		e.checkFuncs = append(e.checkFuncs, e.genericSelfCheck(x, checkSig, fnRef))
		return
	}
	e.checks = append(e.checks, jen.Id("_").Op("=").Parens(jen.Func().Add(e.signature(checkSig, nil))).Call(fnRef))
}

// resultStruct sets the type Do returns besides the error. Several results
// travel as one struct, its fields named after the results (stored as R1,
// R2… whatever their names, so renaming a result changes no record): its
// declaration, else nil.
func (e *fileWriter) resultStruct(w *wrap) jen.Code {
	x := w.x
	switch len(x.result) {
	case 0:
		w.resultT = jen.Struct()
		return nil
	case 1:
		w.resultT = e.typ(x.result[0])
		return nil
	}
	w.resultStruct = e.global("idemResult" + w.specBase)
	var fs []jen.Code
	for i, t := range x.result {
		fs = append(fs, jen.Id(x.resultFields[i]).Add(e.typ(t)))
	}
	w.resultT = jen.Id(w.resultStruct)
	return jen.Commentf("%s holds the results of %s, stored as one value.", w.resultStruct, w.display).Line().
		Type().Id(w.resultStruct).Struct(fs...)
}

// beginParams sets the parameters of Key (the wrapper's, variadic still)
// and of begin (structs and arrays by pointer, a variadic as its slice),
// and the wrapper's arguments to begin.
func (e *fileWriter) beginParams(w *wrap) {
	for _, p := range w.x.params {
		if p.isCtx {
			continue
		}
		t := e.typ(p.typ)
		switch {
		case p.variadic:
			w.keyParams = append(w.keyParams, jen.Id(p.name).Op("...").Add(e.typ(p.typ.(*types.Slice).Elem())))
			w.beginParams = append(w.beginParams, jen.Id(p.name).Add(t))
			w.beginArgs = append(w.beginArgs, jen.Id(p.name))
		case p.byPtr:
			w.keyParams = append(w.keyParams, jen.Id(p.name).Add(t))
			w.beginParams = append(w.beginParams, jen.Id(p.name).Op("*").Add(t))
			w.beginArgs = append(w.beginArgs, jen.Op("&").Id(p.name))
		default:
			w.keyParams = append(w.keyParams, jen.Id(p.name).Add(t))
			w.beginParams = append(w.beginParams, jen.Id(p.name).Add(t))
			w.beginArgs = append(w.beginArgs, jen.Id(p.name))
		}
	}
}

// decl is the head of a method of the wrapper type; a generic function's
// helpers are package-level generic functions taking the wrapper type
// first (methods cannot have type parameters).
func (e *fileWriter) decl(w *wrap, name string, params ...jen.Code) *jen.Statement {
	if w.hn.wrapper != "" {
		return jen.Func().Id(name).Types(e.typeParamDecls(w.x)...).Params(append([]jen.Code{jen.Id(w.recv).Op("*").Id(w.typeName)}, params...)...)
	}
	return jen.Func().Add(e.recvDecl(w)).Id(name).Params(params...)
}

// recvDecl is the wrapper methods' receiver: (x *Idempotent), or
// (x *IdempotentRepo[T]) for a generic type's.
func (e *fileWriter) recvDecl(w *wrap) *jen.Statement {
	if w.x.recv != nil && fnTypeParams(w.x).Len() > 0 {
		return jen.Params(jen.Id(w.recv).Op("*").Id(w.typeName).Index(typeArgs(w.x)))
	}
	return jen.Params(jen.Id(w.recv).Op("*").Id(w.typeName))
}

// wrapperMethod emits the wrapper: Do, on the call begin starts.
func (e *fileWriter) wrapperMethod(w *wrap, codecDoc string) jen.Code {
	x := w.x
	names := make([]string, len(x.params))
	for i, p := range x.params {
		names[i] = p.name
	}
	body, sig := e.doCall(w), e.signature(x.sig, names)
	if x.stream != nil {
		body, sig = e.streamCall(w), e.streamSignature(x, names)
	}
	name := x.name
	if w.hn.wrapper != "" {
		name = w.hn.wrapper
	}
	doc := fmt.Sprintf("%s is %s, run at most once per key (%s).%s", name, w.display, x.plan.DocLine, e.streamDoc(x)+e.wrapperDoc(w)+codecDoc)
	if w.hn.wrapper != "" {
		return jen.Comment(doc).Line().
			Func().Id(w.hn.wrapper).Types(e.typeParamDecls(x)...).Add(e.genericParams(x, w.recv, w.typeName, names)).Block(body...)
	}
	return jen.Comment(doc).Line().
		Func().Add(e.recvDecl(w)).Id(x.name).Add(sig).Block(body...)
}

// wrapperDoc says what the key leaves out.
func (e *fileWriter) wrapperDoc(w *wrap) string {
	x, doc := w.x, ""
	if x.inner != "" {
		// Every implementation of the interface shares the method's key
		// space: the interface method is the operation.
		doc = fmt.Sprintf(" The implementation is not part of the key: every %s decorated on one Guard shares %s's keys.", x.recv.Name(), x.name) + doc
	} else if x.recv != nil && !recvKeyed(x) {
		// The receiver's state is not read: two wrappers of two values
		// on one Guard share keys. Say so where the wrapper is read.
		doc = " The receiver is not part of the key (key= can name its fields)." + doc
	}
	if len(x.notKeyed) > 0 {
		doc = " Not keyed: " + strings.Join(x.notKeyed, ", ") + "." + doc
	}
	if fnTypeParams(x).Len() > 0 {
		doc = " The type arguments are part of the key." + doc
	}
	return doc
}

// doCall is the wrapper's body: Do runs the function at most once per key
// begin writes; several results come back through the result struct.
func (e *fileWriter) doCall(w *wrap) []jen.Code {
	x, ns := w.x, w.ns
	call := e.innerCall(w)
	ctxArg := jen.Add(e.qual(contextPkg, "Background")).Call()
	closureParam := e.qual(contextPkg, "Context")
	if x.ctx >= 0 {
		ctxArg = jen.Id(x.params[x.ctx].name)
		closureParam = jen.Id(x.params[x.ctx].name).Add(e.qual(contextPkg, "Context"))
	}
	results := []jen.Code{w.resultT, jen.Error()}
	do := func(inner ...jen.Code) *jen.Statement {
		return jen.Add(e.qual(idemPkg, "Do")).Call(ctxArg, e.beginCall(w),
			jen.Func().Params(closureParam).Params(results...).Block(inner...))
	}
	switch len(x.result) {
	case 0:
		errName := ns.get("err")
		return []jen.Code{
			jen.List(jen.Id("_"), jen.Id(errName)).Op(":=").Add(do(jen.Return(jen.Struct().Values(), call))),
			jen.Return(jen.Id(errName))}
	case 1:
		return []jen.Code{jen.Return(do(jen.Return(call)))}
	}
	r, errName := ns.get("r"), ns.get("err")
	var lhs, rets []jen.Code
	for _, f := range x.resultFields {
		lhs = append(lhs, jen.Id(r).Dot(f))
		rets = append(rets, jen.Id(r).Dot(f))
	}
	lhs = append(lhs, jen.Id(errName))
	rets = append(rets, jen.Id(errName))
	results = []jen.Code{jen.Id(r).Id(w.resultStruct), jen.Id(errName).Error()}
	return []jen.Code{
		jen.List(jen.Id(r), jen.Id(errName)).Op(":=").Add(do(
			jen.List(lhs...).Op("=").Add(call),
			jen.Return(),
		)),
		jen.Return(rets...)}
}

// keyMethod emits the Key helper: what an operator needs to find the
// call's record.
func (e *fileWriter) keyMethod(w *wrap) jen.Code {
	fname := w.x.name
	doc := fmt.Sprintf("%s is the store key %s claims for these arguments; nothing runs.", w.hn.key, fname)
	if w.hn.key != fname+"Key" && w.hn.wrapper == "" {
		doc += fmt.Sprintf(" (Not %sKey: %s already has that name.)", fname, w.typeName)
	}
	return jen.Comment(doc).Line().
		Add(e.decl(w, w.hn.key, w.keyParams...)).Params(jen.String(), jen.Error()).Block(
		jen.Return(e.beginCall(w).Dot("StoreKey").Call()))
}

// begin emits the begin helper: the key material, written once for the
// wrapper and Key.
func (e *fileWriter) begin(w *wrap, material []jen.Code) jen.Code {
	k := w.k
	if len(material) == 0 {
		k = "_"
	}
	body := []jen.Code{jen.List(jen.Id(w.c), jen.Id(k)).Op(":=").Add(e.qual(implPkg, "Begin")).Call(jen.Id(w.recv).Dot(w.field), jen.Id(w.specVar))}
	body = append(body, material...)
	body = append(body, jen.Return(jen.Id(w.c)))
	return e.decl(w, w.hn.begin, w.beginParams...).Add(e.qual(idemPkg, "Call")).Block(body...)
}

// keyStatements resolves key= and exclude= and writes the key (and, when
// key= names a subset of the payload, the payload fingerprint).
func (e *emitter) keyStatements(x *fn, c string, ns namer) (keys, payload []jen.Code, ok bool) {
	r := &x.plan.resolved
	ex, keyPaths := r.ex, r.keyPaths
	if !r.keysOK {
		return nil, nil, false
	}
	builder := func(method string) func() *jen.Statement {
		return func() *jen.Statement { return jen.Id(c).Dot(method).Call() }
	}
	if !x.opts.keySet {
		def, ok := e.defaultKey(x, builder("Key"), ns, ex, keyPaths, false)
		return def, nil, ok
	}
	keys, single, ok := e.keyPathStatements(x, builder("Key"), ns, keyPaths)
	// When key= is exactly the default key, the key is the fingerprint.
	if single || !e.pi.isDefaultKey(x, ex, keyPaths) {
		var payloadOK bool
		payload, payloadOK = e.defaultKey(x, builder("Payload"), ns, ex, keyPaths, true)
		ok = ok && payloadOK
	}
	return keys, payload, ok
}

// defaultKey writes the default key through b: every parameter but the
// context, minus exclusions; lenient for the payload under key=.
func (e *emitter) defaultKey(x *fn, b func() *jen.Statement, ns namer, ex exclusions, keyPaths []keyPath, lenient bool) ([]jen.Code, bool) {
	var out []jen.Code
	var probs []problem
	var at []token.Position // of each problem's parameter
	ok := true
	for i, p := range x.params {
		if p.isCtx || ex.whole[i] {
			continue
		}
		name := x.sig.Params().At(i).Name()
		if name == "" || name == "_" {
			name = p.name // what exclude= and key= accept for it
		}
		if why := e.pi.notIdentity(p); why != "" {
			x.notKeyed = addOnce(x.notKeyed, name+" ("+why+")")
			continue
		}
		w := &writer{e: e, b: b, n: ns, lenient: lenient, payload: lenient}
		s, good := w.write(val{e: id(p.name), ptr: p.byPtr}, p.typ, name, ex.trees[i], p.variadic)
		sites := x.plan.keys.params
		if lenient {
			sites = x.plan.keys.payload
		}
		site := e.plannedKeySite(x, siteAt(sites, i), good, name)
		for _, sk := range site.skipped {
			x.notKeyed = addOnce(x.notKeyed, sk)
		}
		if !good {
			for range site.problems {
				at = append(at, e.pi.fset.Position(x.paramPos(i)))
			}
			probs = append(probs, site.problems...)
			ok = false
			continue
		}
		out = append(out, s...)
	}
	e.report(x, probs, at, keyPaths)
	return out, ok
}

// keyPathStatements writes the key from key= paths through b. A single
// string path is the key as it is (an ID); single says so.
func (e *emitter) keyPathStatements(x *fn, b func() *jen.Statement, ns namer, keyPaths []keyPath) (keys []jen.Code, single, ok bool) {
	pi, ok := e.pi, true
	w := &writer{e: e, b: b, n: ns}
	single = len(keyPaths) == 1 && isString(keyPaths[0].typ)
	for j, kp := range keyPaths {
		if why := e.pi.pathNotIdentity(x, kp); why != "" {
			pi.d.add(kp.opt.pos, "key: %s (%s) is no part of a call's identity; it cannot be keyed", kp.opt.text, why)
			ok = false
			continue
		}
		v := kp.value(x)
		var s []jen.Code
		if single {
			arg := v.value()
			if !types.Identical(kp.typ, types.Typ[types.String]) {
				arg = jen.String().Call(arg)
			}
			s = one(w.b().Dot("ID").Call(arg))
		} else {
			var good bool
			s, good = w.write(v, kp.typ, kp.opt.text, nil, len(kp.fields) == 0 && x.params[kp.param].variadic)
			site := e.plannedKeySite(x, siteAt(x.plan.keys.paths, j), good, kp.opt.text)
			if !good {
				for _, line := range collapse(site.problems) {
					pi.d.add(kp.opt.pos, "key: cannot key %s", keyLine(line, "key on other fields"))
				}
				ok = false
				continue
			}
			for _, sk := range site.skipped {
				x.notKeyed = addOnce(x.notKeyed, sk)
			}
		}
		if g := kp.guard(x); g != nil {
			// A nil pointer on the way is a value of its own (absent):
			// Nil, or a pointer marker and then the path's value, so an
			// absent path never shares bytes with a present one.
			onNil := w.b().Dot("Nil").Call()
			if single {
				onNil = w.b().Dot("ID").Call(jen.Lit("")) // no ID: rejected as empty
			} else {
				s = append(one(w.b().Dot("Ptr").Call()), s...)
			}
			s = one(jen.If(g).Block(onNil).Else().Block(s...))
		}
		keys = append(keys, s...)
	}
	return keys, single, ok
}

// recvKeyed reports whether key= names fields of x's receiver.
func recvKeyed(x *fn) bool {
	for _, p := range x.opts.key {
		if x.recvName != "" && strings.HasPrefix(p.text, x.recvName+".") {
			return true
		}
	}
	return false
}

// orderStatements resolves order= and writes the entity's key material
// (c.Entity(), with the same encoding as keys) and the event time
// (c.At). The time path must be a time.Time or a *time.Time; a nil
// pointer on it means the event has no time, which the call rejects as
// ErrInvalidKey rather than guessing one.
func (e *emitter) orderStatements(x *fn, c string, ns namer) ([]jen.Code, bool) {
	o := x.opts
	if !o.orderSet {
		return nil, true
	}
	pi, r := e.pi, &x.plan.resolved
	ent, entOK, at, atOK := r.ent, r.entOK, r.at, r.atOK
	var out []jen.Code
	timePtr := false
	if atOK {
		_, timePtr = at.typ.(*types.Pointer)
	}
	if entOK {
		w := &writer{e: e, b: func() *jen.Statement { return jen.Id(c).Dot("Entity").Call() }, n: ns}
		v := ent.value(x)
		s, good := w.write(v, ent.typ, ent.opt.text, nil, len(ent.fields) == 0 && x.params[ent.param].variadic)
		site := e.plannedKeySite(x, x.plan.keys.entity, good, ent.opt.text)
		if !good {
			for _, line := range collapse(site.problems) {
				pi.d.add(o.orderEntity.pos, "order: cannot key the entity %s", keyLine(line, "name a keyable entity"))
			}
			entOK = false
		} else {
			if g := ent.guard(x); g != nil {
				s = append(one(w.b().Dot("Ptr").Call()), s...) // as for key= paths
				s = one(jen.If(g).Block(w.b().Dot("Nil").Call()).Else().Block(s...))
			}
			out = append(out, s...)
		}
	}
	if !entOK || !atOK {
		return nil, false
	}
	tv := at.value(x).value()
	nilCheck := at.guard(x)
	if timePtr {
		cond := at.expr(x, len(at.fields)).Op("==").Nil()
		if nilCheck != nil {
			nilCheck = jen.Add(nilCheck).Op("||").Add(cond)
		} else {
			nilCheck = cond
		}
		tv = jen.Op("*").Add(tv)
	}
	set := jen.Id(c).Dot("At").Call(tv)
	if nilCheck == nil {
		return append(out, set), true
	}
	errorsPkg := types.NewPackage("errors", "errors")
	fail := jen.Id(c).Dot("Entity").Call().Dot("Fail").Call(
		e.qual(errorsPkg, "New").Call(jen.Lit("order: " + at.opt.text + " is nil: the event has no time")))
	return append(out, jen.If(nilCheck).Block(fail).Else().Block(set)), true
}
