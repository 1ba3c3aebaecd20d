package idem

import (
	"hash/maphash"
	"reflect"
	"sync"
	"sync/atomic"
)

// resultMemo remembers recently decoded replay results, so a replay whose
// stored bytes are the ones decoded before returns the value without
// running the codec. For a small JSON result from a store that returns
// bytes, a replay costs 255 ns and no allocation with it, 1,064 ns and 6
// allocations without (BenchmarkResultMemo). Entries hold the exact bytes they were
// decoded from and are used only when a replay's bytes are equal.
//
// Only result types that a copy fully isolates are remembered: no
// pointers, slices, maps, interfaces, channels or funcs anywhere inside
// (strings are immutable, so they may be shared). Every caller gets its
// own copy of such a value, so sharing one decode cannot let one caller's
// changes reach another. Other types are decoded on every replay.
//
// Like keyMemo it is direct-mapped and lock-free: a power-of-two array of
// atomic pointers to immutable entries, bounded by construction.
type resultMemo struct{ directMap[resultEntry] }

type resultEntry struct {
	key   string // the store key
	data  string // the stored bytes value was decoded from
	value any
}

// maxMemoResult bounds the stored bytes one entry may hold.
const maxMemoResult = 2048

func newResultMemo(entries int) *resultMemo {
	if entries <= 0 {
		return nil
	}
	return &resultMemo{newDirectMap[resultEntry](entries)}
}

func (m *resultMemo) slot(key string) *atomic.Pointer[resultEntry] {
	return m.at(maphash.String(memoSeed, key))
}

// get returns the remembered value for key decoded from exactly data.
func (m *resultMemo) get(key string, data []byte) (any, bool) {
	if m == nil || len(data) > maxMemoResult {
		return nil, false
	}
	e := m.slot(key).Load()
	if e == nil || e.key != key || e.data != string(data) {
		return nil, false
	}
	return e.value, true
}

func (m *resultMemo) put(key string, data []byte, v any) {
	if m == nil || len(data) > maxMemoResult {
		return
	}
	m.slot(key).Store(&resultEntry{key: key, data: string(data), value: v})
}

// isolated caches, per type, whether a copy of a value shares nothing
// with the original.
var isolated sync.Map // reflect.Type -> bool

func copyIsolates(t reflect.Type) bool {
	if v, ok := isolated.Load(t); ok {
		return v.(bool)
	}
	ok := pointerFree(t, 0)
	isolated.Store(t, ok)
	return ok
}

func pointerFree(t reflect.Type, depth int) bool {
	if depth > 32 {
		return false
	}
	switch t.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr,
		reflect.Float32, reflect.Float64, reflect.Complex64, reflect.Complex128, reflect.String:
		return true
	case reflect.Array:
		return pointerFree(t.Elem(), depth+1)
	case reflect.Struct:
		for i := range t.NumField() {
			if !pointerFree(t.Field(i).Type, depth+1) {
				return false
			}
		}
		return true
	}
	return false
}
