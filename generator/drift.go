package generator

import "go/types"

// The struct types whose fields the key code reads are recorded; a
// compile-time check that they did not change comes next.

// readFields records that the key code reads the fields of n.
func (e *emitter) readFields(n *types.Named) {
	if _, ok := n.Underlying().(*types.Struct); !ok || n.TypeArgs().Len() > 0 {
		return
	}
	e.fieldsRead[n.Obj()] = n
}

// readPath records the structs a key=, exclude= or order= path reads.
func (e *emitter) readPath(kp keyPath) {
	for _, t := range kp.structs {
		if p, ok := types.Unalias(t).Underlying().(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok {
			e.readFields(n)
		}
	}
}
