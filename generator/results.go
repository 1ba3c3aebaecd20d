package generator

import "go/types"

func isStruct(t types.Type) bool {
	if p, ok := t.Underlying().(*types.Pointer); ok {
		t = p.Elem()
	}
	_, ok := t.Underlying().(*types.Struct)
	return ok
}

func joinPath(path, field string) string {
	if path == "" {
		return field
	}
	return path + "." + field
}
