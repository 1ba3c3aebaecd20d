package idemkey_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/idemgen/idemgen/runtime/idemkey"
)

func TestParseKey(t *testing.T) {
	tests := []struct {
		in   []string
		want string
		ok   bool
	}{
		{[]string{"abc"}, "abc", true},
		{[]string{`"abc"`}, "abc", true},
		{[]string{` "abc" `}, "abc", true},
		{[]string{`"a b"`}, "a b", true},
		{[]string{`"a\"b\\c"`}, `a"b\c`, true},
		{[]string{"8e03978e-40d5-43e8-bc93-6894a57f9324"}, "8e03978e-40d5-43e8-bc93-6894a57f9324", true},
		{nil, "", false},
		{[]string{"a", "b"}, "", false},
		{[]string{""}, "", false},
		{[]string{`""`}, "", false},
		{[]string{`"abc`}, "", false},
		{[]string{`"abc"x`}, "", false},
		{[]string{`"a\nb"`}, "", false},
		{[]string{"a,b"}, "", false},
		{[]string{"a\tb"}, "", false},
		{[]string{`"` + strings.Repeat("x", 255) + `"`}, strings.Repeat("x", 255), true},
		{[]string{strings.Repeat("x", 256)}, "", false},
	}
	for _, tc := range tests {
		got, err := idemkey.Parse(tc.in)
		if (err == nil) != tc.ok || got != tc.want {
			t.Errorf("Parse(%q) = %q, %v; want %q, ok=%v", tc.in, got, err, tc.want, tc.ok)
		}
	}
}

// TestNewAndFormat: a minted key is a version 4 UUID, and its formatted
// form parses back to it.
func TestNewAndFormat(t *testing.T) {
	uuid := regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)
	seen := map[string]bool{}
	for range 100 {
		k := idemkey.New()
		if !uuid.MatchString(k) || seen[k] {
			t.Fatalf("New() = %q: not a fresh version 4 UUID", k)
		}
		seen[k] = true
	}
	tests := []string{"abc", `a"b\c`, strings.Repeat("x", idemkey.MaxLen)}
	for _, k := range tests {
		got, err := idemkey.Parse([]string{idemkey.Format(k)})
		if err != nil || got != k {
			t.Errorf("Parse(Format(%q)) = %q, %v", k, got, err)
		}
	}
}
