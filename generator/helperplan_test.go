package generator

import (
	"go/types"
	"slices"
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
		{"keyhelper", []helperPlan{
			{Kind: "key", Type: "keyhelper.Request", Name: "idemKeyRequest"},
			{Kind: "key", Type: "keyhelper.Event", Name: "idemKeyEvent"},
		}},
		// Connection reaches itself and fails: the helpers built while
		// it was being built are dropped, and written again on their
		// next use (Streamer, Plain).
		{"keyhelperfailed", []helperPlan{
			{Kind: "key", Type: "keyhelperfailed/mnet.Describer", Name: "idemKeyMnetDescriber"},
			{Kind: "key", Type: "keyhelperfailed/mnet.Connection", Recursive: true, Failed: true},
			{Kind: "key", Type: "keyhelperfailed/mnet.Streamer", Name: "idemKeyMnetStreamer"},
			{Kind: "key", Type: "keyhelperfailed/mnet.Plain", Name: "idemKeyMnetPlain"},
		}},
		// One helper per instance of a generic type.
		{"generics", []helperPlan{
			{Kind: "key", Type: "generics.InvoiceRequest", Name: "idemKeyInvoiceRequest"},
			{Kind: "key", Type: "generics.Opt[int64]", Name: "idemKeyOpt_int64"},
			{Kind: "key", Type: "generics.Opt[string]", Name: "idemKeyOpt_string"},
			{Kind: "key", Type: "generics.Order", Name: "idemKeyOrder"},
			{Kind: "key", Type: "generics.Page[generics/a/model.Invoice]", Name: "idemKeyPage_ModelInvoice"},
			{Kind: "key", Type: "generics/a/model.Invoice", Name: "idemKeyModelInvoice"},
			{Kind: "key", Type: "generics.Page[generics/b/model.Invoice]", Name: "idemKeyPage_ModelInvoice2"},
			{Kind: "key", Type: "generics/b/model.Invoice", Name: "idemKeyModelInvoice2"},
			{Kind: "codec", Type: "generics.Page[generics.Invoice]", Name: "idemEncPage_Invoice"},
			{Kind: "codec", Type: "generics.Invoice", Name: "idemEncInvoice"},
			{Kind: "codec", Type: "generics.Page[generics/b/model.Invoice]", Name: "idemEncPage_ModelInvoice"},
			{Kind: "codec", Type: "generics/b/model.Invoice", Name: "idemEncModelInvoice"},
		}},
		// A union's variants that cannot be keyed or stored fail without
		// failing the union.
		{"unions", []helperPlan{
			{Kind: "key", Type: "unions.Event", Name: "idemKeyEvent"},
			{Kind: "key", Type: "unions.Created", Name: "idemKeyCreated"},
			{Kind: "key", Type: "unions.Deleted", Name: "idemKeyDeleted"},
			{Kind: "key", Type: "unions.Hooked", Failed: true},
			{Kind: "key", Type: "unions.internal", Name: "idemKeyInternal"},
			{Kind: "codec", Type: "unions.Event", Name: "idemEncEvent"},
			{Kind: "codec", Type: "unions.Created", Name: "idemEncCreated"},
			{Kind: "codec", Type: "unions.Deleted", Name: "idemEncDeleted"},
			{Kind: "codec", Type: "unions.Hooked", Failed: true},
			{Kind: "codec", Type: "unions.internal", Failed: true},
			{Kind: "codec", Type: "unions/blocks.Message", Name: "idemEncBlocksMessage"},
			{Kind: "codec", Type: "unions/blocks.Block", Recursive: true, Name: "idemEncBlocksBlock"},
			{Kind: "codec", Type: "unions/blocks.Divider", Name: "idemEncBlocksDivider"},
			{Kind: "codec", Type: "unions/blocks.Image", Name: "idemEncBlocksImage"},
			{Kind: "codec", Type: "unions/blocks.Section", Name: "idemEncBlocksSection"},
		}},
		// Types that reach themselves: their helpers bound the depth.
		{"recursive", []helperPlan{
			{Kind: "key", Type: "recursive.Tree", Recursive: true, Name: "idemKeyTree"},
			{Kind: "key", Type: "recursive.List", Recursive: true, Name: "idemKeyList"},
			{Kind: "key", Type: "recursive.A", Recursive: true, Name: "idemKeyA"},
			{Kind: "key", Type: "recursive.B", Name: "idemKeyB"},
		}},
		// Names the package has are numbered around, the decoder's too
		// (idemDecRes is the package's var).
		{"helpernames", []helperPlan{
			{Kind: "key", Type: "helpernames.Request", Name: "idemKeyRequest2"},
			{Kind: "codec", Type: "helpernames.Res", Name: "idemEncRes2"},
		}},
		// The payload under key=: a lenient helper where the strict one
		// fails.
		{"sdkparams", []helperPlan{
			{Kind: "key", Type: "sdkparams/sdk.ChargeParams", Failed: true},
			{Kind: "key", Type: "sdkparams/sdk.Params", Failed: true},
			{Kind: "payload", Type: "sdkparams/sdk.ChargeParams", Name: "idemKeySdkChargeParams"},
			{Kind: "payload", Type: "sdkparams/sdk.Params", Name: "idemKeySdkParams"},
			{Kind: "codec", Type: "sdkparams/sdk.Charge", Name: "idemEncSdkCharge"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp := planOf(t, tc.name)
			got := shortHelpers(fp.Helpers)
			// The key helpers' facts: TestKeyHelperFacts.
			facts := cmpopts.IgnoreFields(helperPlan{}, "Problems", "Skipped")
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), facts); diff != "" {
				t.Errorf("helpers (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeyHelperFacts: the analysis decides what each key helper refuses
// (a type that cannot be keyed) and leaves out (contexts, another
// package's unexported fields the payload skips), before anything is
// written: render reads them from the plan.
func TestKeyHelperFacts(t *testing.T) {
	tests := []struct {
		name string
		want []helperPlan
	}{
		// The strict helpers of an SDK's params fail on an unexported
		// field; the payload's leave it out, and the request's context.
		{"sdkparams", []helperPlan{
			{Kind: "key", Type: "sdkparams/sdk.ChargeParams", Failed: true, Problems: []string{".Params.extra: unexported field of sdk.Params"}},
			{Kind: "key", Type: "sdkparams/sdk.Params", Failed: true, Problems: []string{".extra: unexported field of sdk.Params"}},
			{Kind: "payload", Type: "sdkparams/sdk.ChargeParams", Skipped: []string{
				".Params.Context (a context)",
				".Params.extra (unexported: not in the payload fingerprint)",
			}},
			{Kind: "payload", Type: "sdkparams/sdk.Params", Skipped: []string{".Context (a context)", ".extra (unexported: not in the payload fingerprint)"}},
		}},
		// A union's variant that holds a func cannot be keyed; the
		// union's helper is written without it.
		{"unions", []helperPlan{
			{Kind: "key", Type: "unions.Event"},
			{Kind: "key", Type: "unions.Created"},
			{Kind: "key", Type: "unions.Deleted"},
			{Kind: "key", Type: "unions.Hooked", Failed: true, Problems: []string{".Fn: func values cannot be keyed"}},
			{Kind: "key", Type: "unions.internal"},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp := planOf(t, tc.name)
			var got []helperPlan
			for _, h := range shortHelpers(fp.Helpers) {
				if h.Kind != "codec" {
					got = append(got, h)
				}
			}
			names := cmpopts.IgnoreFields(helperPlan{}, "Name") // TestHelperPlan
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), names); diff != "" {
				t.Errorf("key helpers (-want +got):\n%s", diff)
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

// TestCodecFacts: the analysis decides what each result codec stores and
// why one cannot, before anything is written: the problems of the codec
// helpers that fail, the variants of each union that are stored, the
// error types restored as themselves, and each function's doc-line facts.
// Render writes from them and walks no type for its problems.
func TestCodecFacts(t *testing.T) {
	type funcFacts struct {
		Lossy, Skipped, Unions []string
		Errs                   bool
		Problems               []string
	}
	tests := []struct {
		name     string
		helpers  []helperPlan        // the failed codec helpers, with their problems
		variants map[string][]string // union → the variants stored
		errTypes []string
		funcs    map[string]funcFacts // by Display
	}{
		{
			name: "unions",
			helpers: []helperPlan{
				{Kind: "codec", Type: "unions.Hooked", Failed: true, Problems: []string{".Fn: func values cannot be stored"}},
				{Kind: "codec", Type: "unions.internal", Failed: true, Problems: []string{".n: unexported field (export it, or give the type a marshaling pair)"}},
			},
			// Hooked and internal are left out of Event's codec.
			variants: map[string][]string{
				"unions.Event":        {"*unions.Created", "*unions.Deleted", "unions.Created"},
				"unions/blocks.Block": {"*unions/blocks.Divider", "*unions/blocks.Image", "*unions/blocks.Section", "unions/blocks.Section"},
			},
			funcs: map[string]funcFacts{
				"blocks.Post":    {Unions: []string{"blocks.Block"}},
				"unions.History": {Unions: []string{"Event"}},
			},
		},
		// Both packages' error types are restored as themselves.
		{
			name:     "errvalues",
			errTypes: []string{"broker.Error", "errvalues.NotFound"},
			funcs: map[string]funcFacts{
				"broker.Produce":   {Errs: true},
				"errvalues.Lookup": {Errs: true},
			},
		},
		// Refused: the problems are the analysis's, render only words them.
		{
			name:    "diag_result_interface",
			helpers: []helperPlan{{Kind: "codec", Type: "diag_result_interface.Res", Failed: true, Problems: []string{".Data: interface fmt.Stringer cannot be decoded to its dynamic type"}}},
			funcs:   map[string]funcFacts{"p.F": {Problems: []string{"r1.Data: interface fmt.Stringer cannot be decoded to its dynamic type"}}},
		},
		// api.List keeps unexported state its JSON leaves out.
		{
			name:  "omitforeign",
			funcs: map[string]funcFacts{"omitforeign.Models": {Lossy: []string{"api.List"}}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fp := planOf(t, tc.name)
			var failed []helperPlan
			for _, h := range shortHelpers(fp.Helpers) {
				if h.Kind == "codec" && h.Failed {
					failed = append(failed, h)
				}
			}
			if diff := cmp.Diff(tc.helpers, failed, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("failed codec helpers (-want +got):\n%s", diff)
			}
			variants := map[string][]string{}
			for n, vs := range fp.variants {
				name := strings.ReplaceAll(types.TypeString(n, nil), "github.com/idemgen/idemgen/testdata/", "")
				for v := range vs {
					variants[name] = append(variants[name], strings.ReplaceAll(v, "github.com/idemgen/idemgen/testdata/", ""))
				}
				slices.Sort(variants[name])
			}
			if diff := cmp.Diff(tc.variants, variants, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("union variants (-want +got):\n%s", diff)
			}
			var errTypes []string
			for o := range fp.errTypes {
				errTypes = append(errTypes, o.Pkg().Name()+"."+o.Name())
			}
			slices.Sort(errTypes)
			if diff := cmp.Diff(tc.errTypes, errTypes, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("error types restored (-want +got):\n%s", diff)
			}
			funcs := map[string]funcFacts{}
			for _, f := range fp.Funcs {
				if c := f.codec; c != nil {
					ff := funcFacts{Lossy: sorted(c.lossy), Skipped: sorted(c.skipped), Unions: sorted(c.unions), Errs: c.errs}
					for _, p := range c.problems {
						ff.Problems = append(ff.Problems, p.path+": "+p.msg)
					}
					if !cmp.Equal(ff, funcFacts{}, cmpopts.EquateEmpty()) {
						funcs[f.Display] = ff
					}
				}
			}
			if diff := cmp.Diff(tc.funcs, funcs, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("functions' codec facts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeySites: the analysis decides what each place a wrapper writes key
// material refuses and leaves out (funcPlan.keys), as the writer words it:
// render reports it and names it on the doc line, and reports a writer
// that found otherwise as a defect (TestRenderReportsPlanDisagreement).
func TestKeySites(t *testing.T) {
	type site struct {
		Problems, Skipped []string
	}
	lines := func(kw *keyWalk) *site {
		if kw == nil {
			return nil
		}
		s := &site{Skipped: kw.skipped}
		for _, p := range kw.problems {
			s.Problems = append(s.Problems, p.path+": "+p.reason+" (exclude="+p.exclude+")")
		}
		return s
	}
	tests := []struct {
		name string
		fn   string             // Display
		want map[string][]*site // "params", "payload", "paths", "entity"
	}{
		// Unnamed parameters are named as exclude= accepts them (p1).
		{"diag_blank_param", "p.G", map[string][]*site{
			"params": {nil, {Problems: []string{"p1: channels cannot be keyed (exclude=p1)"}}, {}},
		}},
		{"diag_blank_param", "p.U", map[string][]*site{
			"params": {nil, {}, {Problems: []string{"p2: channels cannot be keyed (exclude=p2)"}}},
		}},
		// key= is the SDK's key; the payload leaves its context and
		// unexported state out.
		{"sdkparams", "sdkparams.Charge", map[string][]*site{
			"paths":   {{}},
			"payload": {nil, {Skipped: []string{"params.Params.Context (a context)", "params.Params.extra (unexported: not in the payload fingerprint)"}}},
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name+"/"+tc.fn, func(t *testing.T) {
			fp := planOf(t, tc.name)
			got := map[string][]*site{}
			for _, f := range fp.Funcs {
				if f.Display != tc.fn {
					continue
				}
				for name, sites := range map[string][]*keyWalk{"params": f.keys.params, "payload": f.keys.payload, "paths": f.keys.paths, "entity": {f.keys.entity}} {
					for _, kw := range sites {
						if len(sites) > 0 && (name != "entity" || kw != nil) {
							got[name] = append(got[name], lines(kw))
						}
					}
				}
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("key sites (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKeyTries: the analysis decides which union variants and zero-size
// fields the key writer writes (filePlan.keyTries); render only reads it.
func TestKeyTries(t *testing.T) {
	tests := []struct {
		name string
		want map[string]bool // type (relative to the case) -> keyable, strict mode
	}{
		// Hooked keys through a func field: a value of it is ErrInvalidKey.
		{"unions", map[string]bool{
			"unions.Hooked": false, "*unions.Hooked": false,
			"unions.internal": true, "*unions.internal": true,
			"unions.Created": true, "*unions.Created": true, "*unions.Deleted": true,
		}},
		// A zero-size field is written where it can be, else left out.
		{"keycloudsdk", map[string]bool{"[0]func()": false, "[0]int": true}},
		{"keyhelperfailed", map[string]bool{
			"keyhelperfailed/mnet.Connection": false, "*keyhelperfailed/mnet.Connection": false,
			"keyhelperfailed/mnet.Plain": true, "*keyhelperfailed/mnet.Plain": true,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]bool{}
			for mode, tries := range planOf(t, tc.name).keyTries {
				tries.Iterate(func(typ types.Type, ok any) {
					name := strings.ReplaceAll(types.TypeString(typ, nil), "github.com/idemgen/idemgen/testdata/", "")
					if mode != (keyMode{}) {
						t.Errorf("%s tried in mode %+v, want only the strict mode here", name, mode)
					}
					got[name] = ok.(bool)
				})
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("key tries (-want +got):\n%s", diff)
			}
		})
	}
}
