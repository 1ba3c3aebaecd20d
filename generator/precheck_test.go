package generator

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A deliberately broken emitter (one that drops a helper) is caught by the
// pre-write check: the functions whose code names the helper are refused
// as a generator defect, at their annotation, naming the identifier; the
// rest of the package is generated, and what is returned compiles. When
// every function is refused, no file is returned (none is written).
func TestPrecheckCatchesBrokenEmitter(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, pkg, drop string
		wantDiags       []string
		wantFile        bool
		kept, refused   []string
	}{
		{
			name: "one function", pkg: "aliasunexported", drop: "idemKeyReceipt",
			wantDiags: []string{"testdata/aliasunexported/aliasunexported.go:39:6: function Store: not wrapped: an idemgen defect: its generated code does not compile at idemKeyReceipt (idem_gen.go:65:2: undefined: idemKeyReceipt); the rest of idem_gen.go is generated; please report it"},
			wantFile:  true,
			kept:      []string{"func (c *IdempotentClient) UploadBuffer(", "func (c *IdempotentBlockClient) List("},
			refused:   []string{"func (x *Idempotent) Store(", "idemKeyReceipt"},
		},
		{
			name: "every function", pkg: "keyhelperfailed", drop: "idemKeyMnetPlain",
			wantDiags: []string{
				"testdata/keyhelperfailed/keyhelperfailed.go:20:6: function Describe: not wrapped: an idemgen defect: its generated code does not compile at idemKeyMnetPlain (idem_gen.go:80:3: undefined: idemKeyMnetPlain); the rest of idem_gen.go is generated; please report it",
				"testdata/keyhelperfailed/keyhelperfailed.go:28:6: function Stream: not wrapped: an idemgen defect: its generated code does not compile at idemKeyMnetPlain (idem_gen.go:95:3: undefined: idemKeyMnetPlain); the rest of idem_gen.go is generated; please report it",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			breakHelpers = func(hs []helperDecl) []helperDecl {
				var out []helperDecl
				for _, h := range hs {
					if h.name != tc.drop {
						out = append(out, h)
					}
				}
				return out
			}
			defer func() { breakHelpers = nil }()
			files, err := Generate(Config{Dir: root, Patterns: []string{"./testdata/" + tc.pkg}})
			got := diagnosticsOf(t, err)
			if diff := cmp.Diff(tc.wantDiags, got); diff != "" {
				t.Errorf("diagnostics (-want +got):\n%s", diff)
			}
			if !tc.wantFile {
				if len(files) != 0 {
					t.Fatalf("a file was returned for a package whose every function was refused: %s", files[0].Path)
				}
				return
			}
			if len(files) != 1 || files[0].Content == nil {
				t.Fatalf("want the rest of the package generated, got %d files", len(files))
			}
			src := string(files[0].Content)
			for _, k := range tc.kept {
				if !strings.Contains(src, k) {
					t.Errorf("the file lost %q", k)
				}
			}
			for _, r := range tc.refused {
				if strings.Contains(src, r) {
					t.Errorf("the file still holds %q", r)
				}
			}
		})
	}
}
