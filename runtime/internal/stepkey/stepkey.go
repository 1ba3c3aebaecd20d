// Package stepkey is how the DynamoDB and Firestore stores name a step in
// the map of steps a record holds, and how they read that map back. One
// escaping serves both so that a name is stored the same way in either.
package stepkey

import (
	"fmt"
	"strings"
)

// Key is the steps map's key for the step name: the name itself, or, for
// a name neither database can take as a map key or field name (empty, or
// of Firestore's reserved form __x__) or that could be mistaken for an
// escaped one (starting with "~"), "~" and the name.
func Key(name string) string {
	if name == "" || name[0] == '~' || len(name) >= 4 && strings.HasPrefix(name, "__") && strings.HasSuffix(name, "__") {
		return "~" + name
	}
	return name
}

// Name inverts Key: false for a key Key never makes.
func Name(key string) (string, bool) {
	if strings.HasPrefix(key, "~") {
		return key[1:], Key(key[1:]) == key
	}
	return key, key != "" && Key(key) == key
}

// Decode reads a steps map whose values bytes turns into step data (false
// for a value of another type, named want in the error): step name ->
// data, never nil data; nil for an empty map.
func Decode[V any](m map[string]V, bytes func(V) ([]byte, bool), want string) (map[string][]byte, error) {
	if len(m) == 0 {
		return nil, nil
	}
	steps := make(map[string][]byte, len(m))
	for k, v := range m {
		data, ok := bytes(v)
		if !ok {
			return nil, fmt.Errorf("step %q is %T, want %s", k, v, want)
		}
		name, ok := Name(k)
		if !ok {
			return nil, fmt.Errorf("%q is not a step's map key", k)
		}
		if data == nil {
			data = []byte{}
		}
		steps[name] = data
	}
	return steps, nil
}
