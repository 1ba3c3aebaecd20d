package restclient

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCreateReplaysUserWithoutResponse(t *testing.T) {
	for _, ng := range guards(t) {
		t.Run(ng.store, func(t *testing.T) {
			ctx := context.Background()
			s := &UsersService{}
			api := NewIdempotentUsersService(s, ng.g)
			first, resp, err := api.Create(ctx, "octo")
			if err != nil || resp == nil || resp.StatusCode != 201 {
				t.Fatalf("first call: %v %v", resp, err)
			}
			replay, resp2, err := api.Create(ctx, "octo")
			if err != nil {
				t.Fatal(err)
			}
			if resp2 != nil {
				t.Errorf("omitted *http.Response replayed as %v, want nil", resp2)
			}
			if diff := cmp.Diff(first, replay); diff != "" {
				t.Errorf("replay differs (-first +replay):\n%s", diff)
			}
			if s.runs.Load() != 1 {
				t.Fatalf("ran %d times", s.runs.Load())
			}
		})
	}
}
