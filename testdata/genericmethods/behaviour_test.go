package genericmethods

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// Repo[User] and Repo[Team] wrappers over one Guard: an entity with the
// same ID is another call under another type argument; the same entity
// twice is one call, and its replay equals the first result.
func TestGenericMethodTypeArgumentInKey(t *testing.T) {
	for _, g := range guards(t) {
		t.Run(g.store, func(t *testing.T) {
			ctx := context.Background()
			users := NewIdempotentRepo(&Repo[User]{Table: "users"}, g.g)
			teams := NewIdempotentRepo(&Repo[Team]{Table: "teams"}, g.g)
			first, err := users.Save(ctx, User{"42"})
			if err != nil {
				t.Fatal(err)
			}
			again, err := users.Save(ctx, User{"42"})
			if err != nil {
				t.Fatal(err)
			}
			if first != again {
				t.Errorf("replay = %d, first = %d", again, first)
			}
			if _, err := teams.Save(ctx, Team{"42"}); err != nil {
				t.Fatal(err)
			}
			other, err := users.Save(ctx, User{"43"})
			if err != nil {
				t.Fatal(err)
			}
			if other != 2 {
				t.Errorf("users.Save(43) = %d, want 2", other)
			}
			// Saved is promoted from the embedded *Repo[User].
			if diff := cmp.Diff([]User{{"42"}, {"43"}}, users.Saved()); diff != "" {
				t.Errorf("users saved (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]Team{{"42"}}, teams.Saved()); diff != "" {
				t.Errorf("teams saved (-want +got):\n%s", diff)
			}
		})
	}
}

// key=r.Table,id: the receiver's table and the type argument are both
// part of the key.
func TestGenericMethodKeys(t *testing.T) {
	g := newGuard(t)
	tests := []struct {
		name string
		key  func() (string, error)
	}{
		{"users u1", func() (string, error) { return NewIdempotentRepo(&Repo[User]{Table: "users"}, g).RenameKey("u1", "x") }},
		{"users u2", func() (string, error) { return NewIdempotentRepo(&Repo[User]{Table: "users"}, g).RenameKey("u2", "x") }},
		{"admins u1", func() (string, error) { return NewIdempotentRepo(&Repo[User]{Table: "admins"}, g).RenameKey("u1", "x") }},
		{"users u1 as Team", func() (string, error) { return NewIdempotentRepo(&Repo[Team]{Table: "users"}, g).RenameKey("u1", "x") }},
	}
	seen := map[string]string{}
	for _, tt := range tests {
		k, err := tt.key()
		if err != nil {
			t.Fatal(err)
		}
		if other, ok := seen[k]; ok {
			t.Errorf("%s and %s share a key", tt.name, other)
		}
		seen[k] = tt.name
	}
	same, err := NewIdempotentRepo(&Repo[User]{Table: "users"}, g).RenameKey("u1", "x")
	if err != nil {
		t.Fatal(err)
	}
	if seen[same] != "users u1" {
		t.Errorf("the same call has another key")
	}
}
