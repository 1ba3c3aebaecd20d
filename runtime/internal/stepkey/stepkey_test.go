package stepkey

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestKeyRoundTrip(t *testing.T) {
	for _, tc := range []struct{ name, key string }{
		{"charge", "charge"},
		{"", "~"},
		{"~x", "~~x"},
		{"__x__", "~__x__"},
		{"__", "__"},
	} {
		if got := Key(tc.name); got != tc.key {
			t.Errorf("Key(%q) = %q, want %q", tc.name, got, tc.key)
		}
		if got, ok := Name(tc.key); !ok || got != tc.name {
			t.Errorf("Name(%q) = %q, %v, want %q", tc.key, got, ok, tc.name)
		}
	}
	for _, key := range []string{"", "~charge", "~__"} {
		if _, ok := Name(key); ok {
			t.Errorf("Name(%q) accepted a key Key never makes", key)
		}
	}
}

func TestDecode(t *testing.T) {
	bytes := func(v any) ([]byte, bool) { b, ok := v.([]byte); return b, ok }
	got, err := Decode(map[string]any{"a": []byte("1"), "~": []byte(nil)}, bytes, "bytes")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]byte{"a": []byte("1"), "": {}}, got); diff != "" {
		t.Errorf("Decode (-want +got):\n%s", diff)
	}
	for _, m := range []map[string]any{{"a": 1}, {"~a": []byte("1")}} {
		if _, err := Decode(m, bytes, "bytes"); err == nil {
			t.Errorf("Decode(%v) = nil error", m)
		}
	}
	if got, err := Decode(map[string]any{}, bytes, "bytes"); got != nil || err != nil {
		t.Errorf("Decode of an empty map = %v, %v; want nil, nil", got, err)
	}
}
