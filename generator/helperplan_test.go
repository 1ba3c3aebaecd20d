package generator

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// TestHelperPlan: the analysis decides the file's key and codec helpers
// as data (which are written, which recurse, which fail), before anything
// is rendered.
func TestHelperPlan(t *testing.T) {
	tests := []struct {
		name string
		want []helperPlan
	}{
		// Each named type's key helper, once.
		{"keyhelper", []helperPlan{{Kind: "key", Type: "keyhelper.Request"}, {Kind: "key", Type: "keyhelper.Event"}}},
		// Connection reaches itself and fails: the helpers built while
		// it was being built are dropped, and written again on their
		// next use (Streamer, Plain).
		{"keyhelperfailed", []helperPlan{
			{Kind: "key", Type: "keyhelperfailed/mnet.Describer"},
			{Kind: "key", Type: "keyhelperfailed/mnet.Connection", Recursive: true, Failed: true},
			{Kind: "key", Type: "keyhelperfailed/mnet.Streamer"},
			{Kind: "key", Type: "keyhelperfailed/mnet.Plain"},
		}},
		// One helper per instance of a generic type.
		{"generics", []helperPlan{
			{Kind: "key", Type: "generics.InvoiceRequest"},
			{Kind: "key", Type: "generics.Opt[int64]"},
			{Kind: "key", Type: "generics.Opt[string]"},
			{Kind: "key", Type: "generics.Order"},
			{Kind: "key", Type: "generics.Page[generics/a/model.Invoice]"},
			{Kind: "key", Type: "generics/a/model.Invoice"},
			{Kind: "key", Type: "generics.Page[generics/b/model.Invoice]"},
			{Kind: "key", Type: "generics/b/model.Invoice"},
			{Kind: "codec", Type: "generics.Page[generics.Invoice]"},
			{Kind: "codec", Type: "generics.Invoice"},
			{Kind: "codec", Type: "generics.Page[generics/b/model.Invoice]"},
			{Kind: "codec", Type: "generics/b/model.Invoice"},
		}},
		// A union's variants that cannot be keyed or stored fail without
		// failing the union.
		{"unions", []helperPlan{
			{Kind: "key", Type: "unions.Event"},
			{Kind: "key", Type: "unions.Created"},
			{Kind: "key", Type: "unions.Deleted"},
			{Kind: "key", Type: "unions.Hooked", Failed: true},
			{Kind: "key", Type: "unions.internal"},
			{Kind: "codec", Type: "unions.Event"},
			{Kind: "codec", Type: "unions.Created"},
			{Kind: "codec", Type: "unions.Deleted"},
			{Kind: "codec", Type: "unions.Hooked", Failed: true},
			{Kind: "codec", Type: "unions.internal", Failed: true},
			{Kind: "codec", Type: "unions/blocks.Message"},
			{Kind: "codec", Type: "unions/blocks.Block", Recursive: true},
			{Kind: "codec", Type: "unions/blocks.Divider"},
			{Kind: "codec", Type: "unions/blocks.Image"},
			{Kind: "codec", Type: "unions/blocks.Section"},
		}},
		// Types that reach themselves: their helpers bound the depth.
		{"recursive", []helperPlan{
			{Kind: "key", Type: "recursive.Tree", Recursive: true},
			{Kind: "key", Type: "recursive.List", Recursive: true},
			{Kind: "key", Type: "recursive.A", Recursive: true},
			{Kind: "key", Type: "recursive.B"},
		}},
		// The payload under key=: a lenient helper where the strict one
		// fails.
		{"sdkparams", []helperPlan{
			{Kind: "key", Type: "sdkparams/sdk.ChargeParams", Failed: true},
			{Kind: "key", Type: "sdkparams/sdk.Params", Failed: true},
			{Kind: "payload", Type: "sdkparams/sdk.ChargeParams"},
			{Kind: "payload", Type: "sdkparams/sdk.Params"},
			{Kind: "codec", Type: "sdkparams/sdk.Charge"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp := planOf(t, tc.name)
			got := shortHelpers(fp.Helpers)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("helpers (-want +got):\n%s", diff)
			}
		})
	}
}

// shortHelpers are hs with the test module's path left out of the types.
func shortHelpers(hs []helperPlan) []helperPlan {
	var out []helperPlan
	for _, h := range hs {
		h.Type = strings.ReplaceAll(h.Type, "github.com/idemgen/idemgen/testdata/", "")
		out = append(out, h)
	}
	return out
}

// TestHelperPlanIsWritten: over every case, the helpers the writers
// decide are the plan's: the analysis keeps the writers' rules (failures
// that drop the helpers built meanwhile included).
func TestHelperPlanIsWritten(t *testing.T) {
	files := 0
	helpersWritten = func(fp *filePlan, written []helperPlan) {
		files++
		if diff := cmp.Diff(fp.Helpers, written, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: helpers written differ from the plan's (-plan +written):\n%s", fp.Package, diff)
		}
	}
	defer func() { helpersWritten = nil }()
	runCases(t)
	if files < 100 {
		t.Errorf("%d files checked, want every case's", files)
	}
}
