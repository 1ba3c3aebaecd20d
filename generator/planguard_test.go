package generator

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestRenderReportsPlanDisagreement: render writes what the plan decides
// and no more; a plan that leaves out a helper the wrappers need, calls
// it failing, has no codec facts for a result, or refuses a key the
// writer writes, is reported as an idemgen defect, never written
// around.
func TestRenderReportsPlanDisagreement(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, dir string
		edit      func(fp *filePlan)
		want      string
	}{
		{
			name: "codec helper missing from the plan",
			dir:  "basic",
			edit: func(fp *filePlan) {
				var kept []helperPlan
				for _, h := range fp.Helpers {
					if h.Kind != codecKind(h.Type) {
						kept = append(kept, h)
					}
				}
				fp.Helpers = kept
			},
			want: "is not in the plan",
		},
		{
			name: "key helper without a name",
			dir:  "keyhelper",
			edit: func(fp *filePlan) {
				for i := range fp.Helpers {
					fp.Helpers[i].Name = ""
				}
			},
			want: "the key helper of",
		},
		{
			name: "written codec helper planned as failed",
			dir:  "basic",
			edit: func(fp *filePlan) {
				for i, h := range fp.Helpers {
					if h.Kind == codecKind(h.Type) {
						fp.Helpers[i].Failed, fp.Helpers[i].Name = true, ""
					}
				}
			},
			want: "is not in the plan as written",
		},
		{
			name: "key site refused by the plan, written by the writer",
			dir:  "basic",
			edit: func(fp *filePlan) {
				for _, f := range fp.Funcs {
					for _, kw := range append(append(f.keys.params, f.keys.payload...), f.keys.paths...) {
						if kw != nil {
							kw.problems = append(kw.problems, problem{path: "x.Y", reason: "func values cannot be keyed"})
						}
					}
				}
			},
			want: "which the analysis decided otherwise",
		},
		{
			name: "union variant the writer cannot key, planned as keyable",
			dir:  "unions",
			edit: func(fp *filePlan) {
				for _, tries := range fp.keyTries {
					for _, typ := range tries.Keys() {
						tries.Set(typ, true)
					}
				}
			},
			want: "cannot be keyed, which the analysis did not decide",
		},
		{
			name: "result codec without the analysis's facts",
			dir:  "basic",
			edit: func(fp *filePlan) {
				for _, f := range fp.Funcs {
					f.codec = nil
				}
			},
			want: "has no codec facts",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			edited := 0
			editPlan = func(fp *filePlan) { edited++; tt.edit(fp) }
			defer func() { editPlan = nil }()
			_, err := Generate(Config{Dir: root, Patterns: []string{"./testdata/" + tt.dir}})
			if edited == 0 {
				t.Fatal("no plan reached render")
			}
			var gerr *Error
			if !errors.As(err, &gerr) {
				t.Fatalf("Generate: %v, want diagnostics", err)
			}
			for _, d := range gerr.Diagnostics {
				if strings.Contains(d.Msg, "internal error") && strings.Contains(d.Msg, tt.want) {
					return
				}
			}
			t.Errorf("diagnostics %v, want an internal error %q", gerr.Diagnostics, tt.want)
		})
	}
}
