package foreign

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/idemgen/idemgen/runtime/idem"

	"github.com/idemgen/idemgen/testdata/foreign/refund"
	"github.com/idemgen/idemgen/testdata/foreign/sdk"
)

func ptr[T any](v T) *T { return &v }

// sdk.New, wrapped from this package: one run per SDK idempotency key,
// the typed result replayed equal through the stored bytes; another
// context and other unexported state are the same call; the same key
// with another amount is a reused key.
func TestForeignFunctionRunsOncePerKey(t *testing.T) {
	params := func(key string, amount int64, ctx context.Context, extra string) *sdk.PaymentIntentParams {
		p := &sdk.PaymentIntentParams{Amount: ptr(amount), Currency: ptr("eur")}
		p.Context, p.IdempotencyKey, p.Metadata = ctx, ptr(key), map[string]string{"order": "o1"}
		p.SetExtra("x", extra)
		return p
	}
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			key := "k-" + t.Name()
			before := sdk.Runs.Load()
			errs := storm(8, func() error {
				_, err := api.New(ctx, params(key, 100, ctx, "a"))
				if errors.Is(err, idem.ErrInProgress) {
					return nil // a duplicate of the running call
				}
				return err
			})
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			first, err := api.New(ctx, params(key, 100, ctx, "a"))
			if err != nil {
				t.Fatal(err)
			}
			replay, err := api.New(ctx, params(key, 100, nil, "b"))
			if err != nil {
				t.Fatal(err)
			}
			// Error.Err is json:"-" in the SDK and cannot be decoded: not
			// stored (the doc line names it), its Code is.
			if diff := cmp.Diff(first, replay, cmpopts.IgnoreFields(sdk.Error{}, "Err")); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			if e := replay.LastError; e == nil || e.Code != "authentication_required" || e.Err != nil {
				t.Errorf("replayed LastError %+v: want its Code, and Err nil through stored bytes", e)
			}
			if first.Created.Location().String() == "UTC" || first.Metadata["order"] != "o1" {
				t.Errorf("replay lost the zone or the metadata: %+v", first)
			}
			if n := sdk.Runs.Load() - before; n != 1 {
				t.Fatalf("sdk.New ran %d times, want 1", n)
			}
			if _, err := api.New(ctx, params(key, 200, ctx, "a")); !errors.Is(err, idem.ErrPayloadMismatch) {
				t.Fatalf("another amount under one key: %v, want ErrPayloadMismatch", err)
			}
			if _, err := api.New(ctx, params(key+"-2", 100, ctx, "a")); err != nil || sdk.Runs.Load()-before != 2 {
				t.Fatalf("another key: %v, runs %d, want a second run", err, sdk.Runs.Load()-before)
			}
			k1, err := api.NewKey(params(key, 100, ctx, "a"))
			if err != nil {
				t.Fatal(err)
			}
			k2, _ := api.NewKey(params(key+"-2", 100, ctx, "a"))
			if k1 == k2 {
				t.Errorf("two idempotency keys share the store key %s", k1)
			}
		})
	}
}

// (*sdk.IssuesService).Create through IdempotentIssuesService: one run
// per (owner, repo, request), the issue replayed equal, the omitted
// *http.Response nil on replay; Get is promoted from *sdk.IssuesService.
func TestForeignMethodRunsOncePerKey(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			svc := &sdk.IssuesService{BaseURL: "https://api.example"}
			api := NewIdempotentIssuesService(svc, ng.g)
			req := func(title string) *sdk.IssueRequest {
				return &sdk.IssueRequest{Title: ptr(title), Labels: []string{}}
			}
			repo := "repo-" + ng.store
			first, resp, err := api.Create(ctx, "octo", repo, req("bug"))
			if err != nil {
				t.Fatal(err)
			}
			if resp == nil || resp.Response == nil || resp.StatusCode != http.StatusCreated {
				t.Fatalf("first call's response: %+v", resp)
			}
			again, resp2, err := api.Create(ctx, "octo", repo, req("bug"))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, again); diff != "" {
				t.Errorf("replay (-first +replay):\n%s", diff)
			}
			if again.Labels == nil {
				t.Errorf("an empty slice came back nil")
			}
			if resp2 != nil {
				t.Errorf("omit=r2: the replay's response is %+v, want nil", resp2)
			}
			if n := svc.Runs(); n != 1 {
				t.Fatalf("Create ran %d times, want 1", n)
			}
			// Another title is another call; so is another repository.
			if _, _, err := api.Create(ctx, "octo", repo, req("feature")); err != nil {
				t.Fatal(err)
			}
			if _, _, err := api.Create(ctx, "octo", repo+"-2", req("bug")); err != nil {
				t.Fatal(err)
			}
			if n := svc.Runs(); n != 3 {
				t.Fatalf("Create ran %d times, want 3", n)
			}
			// The receiver is not part of the key: another service on the
			// same guard replays the first one's issue.
			other := NewIdempotentIssuesService(&sdk.IssuesService{BaseURL: "https://other"}, ng.g)
			if got, _, err := other.Create(ctx, "octo", repo, req("bug")); err != nil || got.URL != first.URL {
				t.Fatalf("another receiver: %+v, %v; want the replay of %s", got, err, first.URL)
			}
			// Lock is wrapped too, on the same wrapper type.
			if err := api.Lock(ctx, "octo", repo, 1); err != nil {
				t.Fatal(err)
			}
			if err := api.Lock(ctx, "octo", repo, 1); !errors.Is(err, idem.ErrDuplicate) {
				t.Fatalf("second Lock: %v, want ErrDuplicate", err)
			}
			if n := svc.Runs(); n != 4 {
				t.Fatalf("the service ran %d times, want 4", n)
			}
			// Methods that are not wrapped are *sdk.IssuesService's own.
			var _ interface {
				Get(context.Context, string, string, int) (*sdk.Issue, *sdk.Response, error)
			} = api
			if is, _, err := api.Get(ctx, "octo", repo, 9); err != nil || is.Number != 9 {
				t.Fatalf("Get: %+v, %v", is, err)
			}
		})
	}
}

// refund.New is wrapped as NewRefund (sdk.New took New), on_duplicate=raise.
func TestForeignFunctionRenamed(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			api := NewIdempotent(ng.g)
			before := refund.Runs.Load()
			got, err := api.NewRefund(ctx, "pi_"+ng.store, 50)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(&refund.Refund{ID: "re_pi_" + ng.store, Amount: 50}, got); diff != "" {
				t.Errorf("refund (-want +got):\n%s", diff)
			}
			if _, err := api.NewRefund(ctx, "pi_"+ng.store, 50); !errors.Is(err, idem.ErrDuplicate) {
				t.Fatalf("duplicate refund: %v, want ErrDuplicate", err)
			}
			if n := refund.Runs.Load() - before; n != 1 {
				t.Fatalf("refund.New ran %d times, want 1", n)
			}
			if err := api.Ship(ctx, "o-"+ng.store); err != nil {
				t.Fatal(err)
			}
		})
	}
}
