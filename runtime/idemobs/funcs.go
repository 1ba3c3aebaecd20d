package idemobs

import (
	"iter"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/idemgen/idemgen/runtime/idem"
)

// Funcs is an observer's per-function cache: the value it keeps for each
// function name (idem.Event.Func), such as that function's metric series
// or measurement options, made once by the function given to NewFuncs and
// found again without a lock or an allocation. runtime/idemprom and
// runtime/idemotel keep theirs in one.
//
// The table is copied on each new name: names are the annotated
// functions, a fixed set, so additions are rare and lookups, once per
// event, take no lock. The first few names are found by a linear scan,
// which for a generated wrapper's Spec.Name (the same string every call)
// is a length check and a pointer comparison; the rest by a map. A Funcs
// is safe for concurrent use.
type Funcs[T any] struct {
	newValue func(name string) *T

	mu    sync.Mutex // serializes additions
	table atomic.Pointer[funcTable[T]]
}

type funcTable[T any] struct {
	first  []funcEntry[T]
	byName map[string]*T
}

type funcEntry[T any] struct {
	name string
	v    *T
}

// scanned is how many names Get finds by a linear scan.
const scanned = 8

// NewFuncs returns an empty cache whose Get makes a name's value with
// newValue the first time it sees the name.
func NewFuncs[T any](newValue func(name string) *T) *Funcs[T] {
	f := &Funcs[T]{newValue: newValue}
	f.table.Store(&funcTable[T]{})
	return f
}

// Get returns name's value, made on its first sighting. Concurrent first
// sightings of one name make it once.
func (f *Funcs[T]) Get(name string) *T {
	t := f.table.Load()
	for _, e := range t.first {
		if e.name == name {
			return e.v
		}
	}
	if v, ok := t.byName[name]; ok {
		return v
	}
	return f.add(name)
}

func (f *Funcs[T]) add(name string) *T {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.table.Load()
	if v, ok := old.byName[name]; ok {
		return v
	}
	v := f.newValue(name)
	t := &funcTable[T]{first: old.first, byName: make(map[string]*T, len(old.byName)+1)}
	for k, x := range old.byName {
		t.byName[k] = x
	}
	t.byName[name] = v
	if len(t.first) < scanned {
		t.first = append(t.first[:len(t.first):len(t.first)], funcEntry[T]{name, v})
	}
	f.table.Store(t)
	return v
}

// All yields every name seen so far with its value, in no particular
// order (the table at the time All is called).
func (f *Funcs[T]) All() iter.Seq2[string, *T] {
	t := f.table.Load()
	return func(yield func(string, *T) bool) {
		for k, v := range t.byName {
			if !yield(k, v) {
				return
			}
		}
	}
}

// CallOutcomes are the outcomes a call reports (every named idem.Outcome
// but the steps' own, which a call's Event never carries): the outcomes
// per-call series start at zero for. An Outcome past the last one has no
// name: its String is "outcome(N)".
func CallOutcomes() []idem.Outcome {
	var out []idem.Outcome
	for o := idem.Outcome(1); !strings.HasPrefix(o.String(), "outcome("); o++ {
		if o != idem.OutcomeStepRan && o != idem.OutcomeStepReplayed {
			out = append(out, o)
		}
	}
	return out
}
