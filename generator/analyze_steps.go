package generator

import (
	"go/ast"
	"go/token"
	"go/types"
	"strings"
)

// A step directive, //idem:step [name=NAME], makes a function a recovery
// point of the guarded call that runs it: the generator writes FStep (a
// method FStep of the same receiver for a method), with F's signature,
// which runs F through idem.StepWith under NAME (default: F, or T.M) with
// F's result codec.

// stepWord starts a step directive: //idem:step.
const stepWord = "step"

// IsStepDirective reports whether a comment's text is a step directive.
func IsStepDirective(text string) bool {
	if !IsDirective(text) {
		return false
	}
	first, _, _ := strings.Cut(strings.TrimSpace(text[len(directivePrefix):]), " ")
	return first == stepWord
}

// StepWrapperName is the name of the generated step wrapper of a function
// or method named name.
func StepWrapperName(name string) string { return name + "Step" }

// isStep reports whether lines are a step directive.
func isStep(lines []*ast.Comment) bool {
	for _, c := range lines {
		if IsStepDirective(c.Text) {
			return true
		}
	}
	return false
}

// stepName parses lines, the directive of a step: //idem:step and at most
// a name= option. It returns the step's name ("" for the default).
func (pi *pkgInfo) stepName(lines []*ast.Comment) (string, bool) {
	if len(lines) > 1 {
		pi.d.add(pi.fset.Position(lines[1].Slash), "a step takes one //idem:step line (with name= on it), not %d directive lines", len(lines))
		return "", false
	}
	c := lines[0]
	base := pi.fset.Position(c.Slash)
	name, ok := "", true
	for _, f := range fieldsWithOffsets(c.Text[len(directivePrefix):]) {
		pos := base
		pos.Column += len(directivePrefix) + f.off
		opt, value, _ := strings.Cut(f.s, "=")
		switch {
		case f.s == stepWord:
		case opt == "name" && value != "" && name == "":
			name = value
		case opt == "name":
			pi.d.add(pos, "step option name needs one value: //idem:step name=charge")
			ok = false
		default:
			pi.d.add(pos, "unknown step option %q: a step takes name= only (//idem:step name=charge)", opt)
			ok = false
		}
	}
	return name, ok
}

// checkStep validates a step-annotated function or method of this package:
// a ctx first, error last, at most one other result, not generic, and a
// free name for its step wrapper. It returns nil after reporting problems.
func (pi *pkgInfo) checkStep(obj *types.Func, at token.Pos, lines []*ast.Comment) *fn {
	name, ok := pi.stepName(lines)
	pos := pi.fset.Position(at)
	sig := obj.Type().(*types.Signature)
	x := &fn{obj: obj, sig: sig, ctx: -1, name: obj.Name(), pos: at, step: true, stepName: name}
	what := "step " + obj.Name()
	if r := sig.Recv(); r != nil {
		named, _ := types.Unalias(derefType(r.Type())).(*types.Named)
		if named == nil || named.TypeParams().Len() > 0 {
			pi.d.add(pos, "%s: steps are methods of non-generic named types or functions; call idem.Step in the method instead", what)
			return nil
		}
		x.recv = named.Obj()
		what = "step " + x.recv.Name() + "." + obj.Name()
		x.recvName = r.Name()
	}
	if sig.TypeParams().Len() > 0 {
		pi.d.add(pos, "%s: generic steps are not supported; call idem.Step in the function instead", what)
		return nil
	}
	if !pi.checkShape(x, what) {
		ok = false
	} else if len(x.result) > 1 {
		pi.d.add(pos, "%s returns %d values besides its error; a step returns at most one (put them in a struct)", what, len(x.result))
		ok = false
	}
	if x.ctx != 0 {
		pi.d.add(pos, "%s must take a context.Context first: the step runs under the guarded call its ctx carries", what)
		ok = false
	}
	if taken := pi.stepNameTaken(x); taken != "" {
		pi.d.add(pos, "%s: its step wrapper's name %s is taken by %s", what, StepWrapperName(obj.Name()), taken)
		ok = false
	}
	if !ok {
		return nil
	}
	return x
}

// stepNameTaken says what already has x's step wrapper's name, if anything.
func (pi *pkgInfo) stepNameTaken(x *fn) string {
	name := StepWrapperName(x.obj.Name())
	if x.recv == nil {
		if pi.scope[name] {
			return "a declaration of package " + pi.pkg.Name
		}
		return ""
	}
	obj, _, _ := types.LookupFieldOrMethod(types.NewPointer(x.recv.Type()), true, x.recv.Pkg(), name)
	if obj != nil && pi.fset.Position(obj.Pos()).Filename != pi.out {
		return "a field or method of " + x.recv.Name()
	}
	return ""
}

func derefType(t types.Type) types.Type {
	if p, ok := t.(*types.Pointer); ok {
		return p.Elem()
	}
	return t
}
