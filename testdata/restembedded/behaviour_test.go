package restembedded

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCreateReplaysRateWithoutHTTPResponse(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			s := &ReposService{}
			api := NewIdempotentReposService(s, ng.g)
			first, resp, err := api.Create(ctx, "idemgen")
			if err != nil || resp.StatusCode != 201 {
				t.Fatalf("first call: %v %v", resp, err)
			}
			replay, resp2, err := api.Create(ctx, "idemgen")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
			if diff := cmp.Diff(&Response{Rate: 4999}, resp2, cmp.AllowUnexported()); diff != "" {
				t.Errorf("replayed response (-want +got):\n%s", diff)
			}
			if n := s.runs.Load(); n != 1 {
				t.Fatalf("ran %d times", n)
			}
		})
	}
}
