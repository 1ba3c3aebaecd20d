package generator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWrapComments(t *testing.T) {
	long := "// " + strings.Repeat("word ", 30)
	for _, tc := range []struct {
		name, in, want string
	}{
		{"short", "// a short line\nfunc f() {}\n", "// a short line\nfunc f() {}\n"},
		{"code is not wrapped", "var x = \"" + strings.Repeat("y", 120) + "\"\n", "var x = \"" + strings.Repeat("y", 120) + "\"\n"},
		{"wrapped at 40", long + "\n", "// word word word word word word word\n// word word word word word word word\n// word word word word word word word\n// word word word word word word word\n// word word\n"},
		{"indented", "\t" + long + "\n", "\t// word word word word word word word\n\t// word word word word word word word\n\t// word word word word word word word\n\t// word word word word word word word\n\t// word word\n"},
		{"one long word", "// " + strings.Repeat("z", 50) + " end\n", "// " + strings.Repeat("z", 50) + "\n// end\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, string(wrapComments([]byte(tc.in), 40))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
