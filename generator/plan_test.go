package generator

import (
	"go/token"
	"go/types"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// planOf analyzes the case testdata/<name> and returns its plan, nil when
// the package has no annotated function.
func planOf(t *testing.T, name string) *filePlan {
	t.Helper()
	return pkgOf(t, name).analyze()
}

// pkgOf loads the case testdata/<name>, ready to be analyzed.
func pkgOf(t *testing.T, name string) *pkgInfo {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: root, Patterns: []string{"./testdata/" + name}, Output: DefaultOutput}
	d, fset := &diags{base: root}, token.NewFileSet()
	pkgs, extra, err := load(root, cfg, fset, d)
	if err != nil {
		t.Fatal(err)
	}
	std, err := newStdLib(root, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(pkgs) != 1 {
		t.Fatalf("%s: %d packages, want 1", name, len(pkgs))
	}
	p := pkgs[0]
	out := filepath.Join(filepath.Dir(p.GoFiles[0]), DefaultOutput)
	return &pkgInfo{pkg: p, fset: fset, out: out, scope: packageScope(p, fset, out), d: d, types: newWellKnown(p.Types), std: std, extra: extra}
}

// TestPlan: the analysis decides names, doc lines and the paths of keys,
// exclusions, order and omitted results as data, before anything is
// rendered (the helpers: TestHelperPlan).
func TestPlan(t *testing.T) {
	const mod = "github.com/idemgen/idemgen/testdata/"
	tests := []struct {
		name string
		want *filePlan
	}{
		{"options", &filePlan{Package: mod + "options", Funcs: []*funcPlan{
			{
				Display: "options.Slow", Spec: "options.slow",
				DocLine: "ttl=1h lease=2s on_duplicate=wait wait=20ms on_failure=lock key=id exclude=note name=options.slow version=3",
				Key:     []string{"id"}, Exclude: []string{"note"},
			},
			{Display: "options.Raise", Spec: mod + "options.Raise", DocLine: "ttl=1.5s lease=250ms on_duplicate=raise"},
		}}},
		{"receiverkey", &filePlan{Package: mod + "receiverkey", Funcs: []*funcPlan{
			{
				Display: "Tenant.Bill", Spec: mod + "receiverkey.Tenant.Bill",
				DocLine: "ttl=24h lease=30s on_duplicate=return key=t.ID,t.region,amount",
				Key:     []string{"t.ID", "t.region", "amount"},
				Reads:   []string{"Tenant"},
			},
			{Display: "Tenant.Notify", Spec: mod + "receiverkey.Tenant.Notify", DocLine: "ttl=24h lease=30s on_duplicate=return"},
		}}},
		{"orderedmethod", &filePlan{Package: mod + "orderedmethod", Funcs: []*funcPlan{{
			Display: "Ledger.Post", Spec: mod + "orderedmethod.Ledger.Post",
			DocLine:     "ttl=24h lease=30s on_duplicate=raise order=account:at grace=90s",
			OrderEntity: "account", OrderTime: "at",
		}}}},
		{"overlap", &filePlan{Package: mod + "overlap", Funcs: []*funcPlan{
			{
				Display: "overlap.Charge", Spec: mod + "overlap.Charge",
				DocLine: "ttl=24h lease=30s on_duplicate=return exclude=p.Params,p.Params.Context omit=r1.Meta,r1.Meta.Raw",
				Exclude: []string{"p.Params"}, Omit: []string{"r1.Meta"},
			},
			{
				Display: "overlap.Refund", Spec: mod + "overlap.Refund",
				DocLine: "ttl=24h lease=30s on_duplicate=return exclude=p.Context,p.Params omit=r1.Meta.Raw,r1.Meta",
				Exclude: []string{"p.Params"}, Omit: []string{"r1.Meta"},
			},
		}}},
		// The drift facts of key= paths: each struct a path reads on its
		// way, once, in path order, embedded ones included.
		{"pointerpath", &filePlan{Package: mod + "pointerpath", Funcs: []*funcPlan{
			{
				Display: "pointerpath.Transfer", Spec: mod + "pointerpath.Transfer",
				DocLine: "ttl=24h lease=30s on_duplicate=return key=req.Account.Tenant,req.Account.ID,req.Account.Owner.Email,req.Account.Owner.Tags",
				Key:     []string{"req.Account.Base.Tenant", "req.Account.ID", "req.Account.Owner.Email", "req.Account.Owner.Tags"},
				Reads:   []string{"Request", "Account", "Base", "Person"},
			},
			{
				Display: "pointerpath.Touch", Spec: mod + "pointerpath.Touch",
				DocLine: "ttl=24h lease=30s on_duplicate=return key=acct.Tenant,acct.By exclude=acct.Trace omit=r1.Note",
				Key:     []string{"acct.Base.Tenant", "acct.Audit.By"},
				Exclude: []string{"acct.Audit.Trace"}, Omit: []string{"r1.Note"},
				Reads: []string{"Account", "Base", "Audit"},
			},
		}}},
		{"diag_key_unknown_param", &filePlan{Package: mod + "diag_key_unknown_param", Funcs: []*funcPlan{{
			Display: "p.F", Spec: mod + "diag_key_unknown_param.F",
			DocLine:     "ttl=24h lease=30s on_duplicate=return key=requestID",
			Diagnostics: []string{`testdata/diag_key_unknown_param/x.go:7:12: key: requestID is not a parameter of F (did you mean "requestId"?)`},
		}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := planOf(t, tc.name)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreUnexported(filePlan{}, funcPlan{}), cmpopts.IgnoreFields(filePlan{}, "Helpers"), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPathDrift: the drift facts of key= and order= paths are derived
// from the plan, before anything is written: each struct a path reads,
// and the generic instances by the function that reads them.
func TestPathDrift(t *testing.T) {
	tests := []struct {
		name            string
		fields, generic []string
	}{
		{name: "pointerpath", fields: []string{"Account", "Audit", "Base", "Person", "Request"}},
		{name: "receiverkey", fields: []string{"Tenant"}},
		{name: "options"},
		{name: "genericmethods", generic: []string{"Rename: Repo[U]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := pathDrift(planOf(t, tc.name).fns)
			var fields, generic []string
			for obj := range d.fields {
				fields = append(fields, obj.Name())
			}
			for _, n := range d.instances {
				fields = append(fields, types.TypeString(n, types.RelativeTo(n.Obj().Pkg())))
			}
			sort.Strings(fields)
			for _, r := range d.generic {
				generic = append(generic, r.x.name+": "+types.TypeString(r.n, types.RelativeTo(r.n.Obj().Pkg())))
			}
			if diff := cmp.Diff(tc.fields, fields, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("structs read (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.generic, generic, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("generic instances read (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDriftFacts: every type the generated code relies on (the structs
// whose fields its key and codec code reads, the types whose
// representation it converts) is decided by the analysis, before the file
// is rendered; rendering notes none.
func TestDriftFacts(t *testing.T) {
	tests := []struct {
		name string
		want []string
	}{
		// Key helpers, codec helpers, conversions of named types and
		// aliases, instances, an instance read with a type parameter.
		{"drift", []string{
			"alias drift.Units", "pin drift.Cents", "pin drift.Code", "pin drift.Codes",
			"pin drift.Rate", "pin drift/ext.Level", "read drift.Base",
			"read drift.Opt[int64]", "read drift.Price", "read drift.Req",
			"read drift/ext.Options", "generic Save: drift.Page[S]",
		}},
		{"keyhelper", []string{"read keyhelper.Event", "read keyhelper.Request"}},
		// The known error types (NotFound) are stored as themselves.
		{"errvalues", []string{
			"pin errvalues/broker.Error", "read errvalues.Item", "read errvalues.NotFound",
			"read errvalues/broker.Partition", "read errvalues/broker.ProduceResponse",
		}},
		// The variants of unions, keyed and stored.
		{"unions", []string{
			"read unions.Created", "read unions.Deleted", "read unions.Hooked",
			"read unions.internal", "read unions/blocks.Divider",
			"read unions/blocks.Image", "read unions/blocks.Message",
			"read unions/blocks.Section",
		}},
		{"recursive", []string{
			"read recursive.A", "read recursive.B", "read recursive.List",
			"read recursive.Tree",
		}},
		// The payload under key= (lenient helpers, tried strict first).
		{"sdkparams", []string{
			"read sdkparams/sdk.Charge", "read sdkparams/sdk.ChargeParams",
			"read sdkparams/sdk.Params",
		}},
		// A helper that cannot be written keeps the facts its walk noted
		// (mnet.Connection), as the writer kept them.
		{"keyhelperfailed", []string{"read keyhelperfailed/mnet.Connection", "read keyhelperfailed/mnet.Plain"}},
		{"recursiveresult", []string{"read recursiveresult.Node"}},
		{"generics", []string{
			"read generics.Invoice", "read generics.InvoiceRequest",
			"read generics.Opt[int64]", "read generics.Opt[string]", "read generics.Order",
			"read generics.Page[generics.Invoice]",
			"read generics.Page[generics/a/model.Invoice]",
			"read generics.Page[generics/b/model.Invoice]",
			"read generics/a/model.Invoice", "read generics/b/model.Invoice",
			"generic Save: generics.Page[S]",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pi := pkgOf(t, tc.name)
			n := len(pi.d.list)
			fp := pi.analyze()
			facts := fp.drift.list()
			// Render seals the facts: one noted while writing panics.
			if pi.render(fp, n) == nil {
				t.Fatalf("no file: %v", pi.d.list)
			}
			var got []string
			for _, f := range facts {
				got = append(got, strings.ReplaceAll(f, "github.com/idemgen/idemgen/testdata/", ""))
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("drift facts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDriftFactsSealed: once rendering begins, noting a fact is a bug of
// the analysis (a type it did not walk), not something to write around.
func TestDriftFactsSealed(t *testing.T) {
	n := types.NewNamed(types.NewTypeName(token.NoPos, nil, "Cents", nil), types.Typ[types.Int64], nil)
	d := newDriftFacts()
	d.pinNamed(n)
	d.seal()
	defer func() {
		if r := recover(); r != "drift fact noted while writing" {
			t.Errorf("noting after seal: recovered %v, want the panic", r)
		}
		if diff := cmp.Diff([]string{"pin Cents"}, d.list()); diff != "" {
			t.Errorf("facts (-want +got):\n%s", diff)
		}
	}()
	d.pinNamed(n)
}
