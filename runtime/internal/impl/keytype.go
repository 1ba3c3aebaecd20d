package impl

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
)

// Type writes the identity of a type: what generated wrappers of generic
// functions write for each type argument, so Publish[OrderPlaced] and
// Publish[OrderCancelled] with equal values are different calls.
//
// The identity is fully qualified and stable across processes and builds:
// a named type by its package path and name (its type arguments as the
// runtime spells them, with their package paths), an unnamed one by its
// structure, recursively (struct fields with their names, the package
// path of unexported ones, embedding and tags; a func's parameters and
// results; an interface's methods). It is not reflect.Type.String(),
// which writes package names: two packages named model would collide.
// Identities are computed once per type and cached.
//
// Two types declared inside functions with one name in one package (local
// types) share an identity, which reflect cannot tell apart: the first
// such type a process keys owns the identity, and keying another is
// ErrInvalidKey, never a key the two share.
func (b *KeyBuilder) Type(t reflect.Type) {
	id := TypeIdentity(t)
	if owner, _ := identityOwners.Load(id); t != nil && owner != t {
		b.Fail(fmt.Errorf("the type %s shares its identity %s with another type (types declared inside functions): key a type declared at package level", t, id))
		return
	}
	b.String(id)
}

var (
	typeIdentities sync.Map // reflect.Type → string
	identityOwners sync.Map // string → the first reflect.Type with that identity
)

// TypeIdentity is the identity that KeyBuilder.Type writes for t; "nil"
// for a nil reflect.Type.
func TypeIdentity(t reflect.Type) string {
	if t == nil {
		return "nil"
	}
	if s, ok := typeIdentities.Load(t); ok {
		return s.(string)
	}
	var sb strings.Builder
	writeTypeIdentity(&sb, t)
	s, _ := typeIdentities.LoadOrStore(t, sb.String())
	identityOwners.LoadOrStore(s, t)
	return s.(string)
}

// writeTypeIdentity writes t: named types stop the recursion, so a
// recursive type (which is always named) ends.
func writeTypeIdentity(b *strings.Builder, t reflect.Type) {
	if name := t.Name(); name != "" {
		if p := t.PkgPath(); p != "" {
			b.WriteString(strconv.Quote(p))
			b.WriteByte('.')
		}
		b.WriteString(name)
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		b.WriteByte('*')
		writeTypeIdentity(b, t.Elem())
	case reflect.Slice:
		b.WriteString("[]")
		writeTypeIdentity(b, t.Elem())
	case reflect.Array:
		b.WriteString("[" + strconv.Itoa(t.Len()) + "]")
		writeTypeIdentity(b, t.Elem())
	case reflect.Map:
		b.WriteString("map[")
		writeTypeIdentity(b, t.Key())
		b.WriteByte(']')
		writeTypeIdentity(b, t.Elem())
	case reflect.Chan:
		switch t.ChanDir() {
		case reflect.RecvDir:
			b.WriteString("<-chan ")
		case reflect.SendDir:
			b.WriteString("chan<- ")
		default:
			b.WriteString("chan ")
		}
		writeTypeIdentity(b, t.Elem())
	case reflect.Struct:
		writeStructIdentity(b, t)
	case reflect.Func:
		writeFuncIdentity(b, t)
	case reflect.Interface:
		writeInterfaceIdentity(b, t)
	default:
		b.WriteString(t.String()) // unreachable: every basic type is named
	}
}

// writeStructIdentity writes a struct type literal: its fields in order,
// with their packages (unexported), embedding and tags.
func writeStructIdentity(b *strings.Builder, t reflect.Type) {
	b.WriteString("struct{")
	writeList(b, t.NumField(), ';', func(i int) {
		f := t.Field(i)
		if f.Anonymous {
			b.WriteString("embedded ")
		}
		writeMemberName(b, f.PkgPath, f.Name)
		b.WriteByte(' ')
		writeTypeIdentity(b, f.Type)
		if f.Tag != "" {
			b.WriteByte(' ')
			b.WriteString(strconv.Quote(string(f.Tag)))
		}
	})
	b.WriteByte('}')
}

// writeMemberName writes a field's or method's name, after its package
// where it is unexported (pkgPath is empty for an exported one).
func writeMemberName(b *strings.Builder, pkgPath, name string) {
	if pkgPath != "" {
		b.WriteString(strconv.Quote(pkgPath))
		b.WriteByte('.')
	}
	b.WriteString(name)
}

// writeFuncIdentity writes a func type literal: parameters, variadic
// marker and results.
func writeFuncIdentity(b *strings.Builder, t reflect.Type) {
	b.WriteString("func(")
	writeTypeList(b, t.NumIn(), t.In, t.IsVariadic())
	b.WriteString(")(")
	writeTypeList(b, t.NumOut(), t.Out, false)
	b.WriteByte(')')
}

// writeTypeList writes the n types at(0) to at(n-1), comma-separated, the
// last as "..." and its element type where variadic.
func writeTypeList(b *strings.Builder, n int, at func(int) reflect.Type, variadic bool) {
	writeList(b, n, ',', func(i int) {
		if variadic && i == n-1 {
			b.WriteString("...")
		}
		writeTypeIdentity(b, at(i))
	})
}

// writeList writes the n items item(0) to item(n-1) writes, sep between
// each two.
func writeList(b *strings.Builder, n int, sep byte, item func(i int)) {
	for i := range n {
		if i > 0 {
			b.WriteByte(sep)
		}
		item(i)
	}
}

// writeInterfaceIdentity writes an interface type literal: its methods
// with their packages (unexported) and signatures.
func writeInterfaceIdentity(b *strings.Builder, t reflect.Type) {
	b.WriteString("interface{")
	writeList(b, t.NumMethod(), ';', func(i int) {
		m := t.Method(i)
		writeMemberName(b, m.PkgPath, m.Name)
		writeTypeIdentity(b, m.Type)
	})
	b.WriteByte('}')
}

// IsNil reports whether v is nil: a nil interface, or a nil pointer, map,
// slice, channel or func. The generated wrapper of a generic function
// writes the nil marker for such a value of a type parameter (an
// interface or pointer type argument) instead of calling its key method
// on it, as it does for a nil value of a concrete type.
func IsNil(v any) bool {
	if v == nil {
		return true
	}
	switch rv := reflect.ValueOf(v); rv.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return rv.IsNil()
	}
	return false
}
