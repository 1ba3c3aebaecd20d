package impl

import (
	"reflect"
	"testing"

	"github.com/google/go-cmp/cmp"

	other "github.com/idemgen/idemgen/runtime/internal/impl/testdata/keytype/impl"
)

type keytypeLocal struct{ ID string }

type keytypeGeneric[T any] struct{ V T }

func TestTypeIdentity(t *testing.T) {
	const self = `"github.com/idemgen/idemgen/runtime/internal/impl"`
	tests := []struct {
		name string
		typ  reflect.Type
		want string
	}{
		{"basic", reflect.TypeFor[int64](), "int64"},
		{"named of this package", reflect.TypeFor[keytypeLocal](), self + ".keytypeLocal"},
		{"same short name, other package", reflect.TypeFor[other.KeyBuilder](), `"github.com/idemgen/idemgen/runtime/internal/impl/testdata/keytype/impl".KeyBuilder`},
		{"pointer and slice", reflect.TypeFor[[]*keytypeLocal](), "[]*" + self + ".keytypeLocal"},
		{"map and array", reflect.TypeFor[map[string][2]int](), "map[string][2]int"},
		{"struct", reflect.TypeFor[struct {
			A string `json:"a"`
			b int
		}](), `struct{A string "json:\"a\"";` + self + `.b int}`},
		{"func", reflect.TypeFor[func(int, ...string) error](), "func(int,...[]string)(error)"},
		{"any", reflect.TypeFor[any](), "interface{}"},
		{"chan", reflect.TypeFor[<-chan int](), "<-chan int"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, TypeIdentity(tt.typ)); diff != "" {
				t.Errorf("TypeIdentity (-want +got):\n%s", diff)
			}
		})
	}
}

// Distinct types have distinct identities, even where reflect.Type.String
// does not tell them apart (two packages named idem).
func TestTypeIdentityDistinct(t *testing.T) {
	types := []reflect.Type{
		reflect.TypeFor[KeyBuilder](),
		reflect.TypeFor[other.KeyBuilder](),
		reflect.TypeFor[*KeyBuilder](),
		reflect.TypeFor[int](),
		reflect.TypeFor[int64](),
		reflect.TypeFor[string](),
		reflect.TypeFor[keytypeGeneric[int]](),
		reflect.TypeFor[keytypeGeneric[int64]](),
		reflect.TypeFor[keytypeGeneric[KeyBuilder]](),
		reflect.TypeFor[keytypeGeneric[other.KeyBuilder]](),
		reflect.TypeFor[struct{ A int }](),
		reflect.TypeFor[struct {
			A int `x:"1"`
		}](),
		reflect.TypeFor[struct{ a int }](),
		reflect.TypeFor[struct{ keytypeLocal }](),
		reflect.TypeFor[struct{ keytypeLocal keytypeLocal }](),
		reflect.TypeFor[[]int](),
		reflect.TypeFor[[1]int](),
		reflect.TypeFor[func(int)](),
		reflect.TypeFor[func(...int)](),
		reflect.TypeFor[func() int](),
	}
	if reflect.TypeFor[KeyBuilder]().String() != reflect.TypeFor[other.KeyBuilder]().String() {
		t.Fatal("the test needs two types whose String() collides")
	}
	seen := map[string]reflect.Type{}
	for _, typ := range types {
		id := TypeIdentity(typ)
		if prev, ok := seen[id]; ok {
			t.Errorf("%v and %v share the identity %q", prev, typ, id)
		}
		seen[id] = typ
	}
	k1, _ := keyOf(t, func(b *KeyBuilder) { b.Type(reflect.TypeFor[KeyBuilder]()) })
	k2, _ := keyOf(t, func(b *KeyBuilder) { b.Type(reflect.TypeFor[other.KeyBuilder]()) })
	if k1 == k2 {
		t.Error("KeyBuilder.Type writes the same key material for two types")
	}
}

func TestIsNil(t *testing.T) {
	var p *keytypeLocal
	var s []int
	var m map[string]int
	var f func()
	var k Keyer
	tests := []struct {
		name string
		v    any
		want bool
	}{
		{"nil interface", nil, true},
		{"nil interface of a named interface type", k, true},
		{"nil pointer", p, true},
		{"nil slice", s, true},
		{"nil map", m, true},
		{"nil func", f, true},
		{"pointer", &keytypeLocal{}, false},
		{"empty slice", []int{}, false},
		{"zero struct", keytypeLocal{}, false},
		{"zero int", 0, false},
		{"empty string", "", false},
	}
	for _, tt := range tests {
		if got := IsNil(tt.v); got != tt.want {
			t.Errorf("%s: IsNil = %v, want %v", tt.name, got, tt.want)
		}
	}
}
