// Package p: a chat API's list result embeds pagination structs whose
// fields carry the same json tags (each embedded struct is tagged, so the
// user's type passes go vet). The generated drift check embeds them too and
// must pass go vet as well.
package p

import (
	"context"

	"github.com/idemgen/idemgen/testdata/embeddedtags/ext"
)

// Page is the pagination of a list call.
type Page struct {
	Page int    `json:"page" xml:"page"`
	Next string `json:"next" xml:"next"`
}

// Stats repeat the page number.
type Stats struct {
	Page  int `json:"page" xml:"page"`
	Total int `json:"total" xml:"total"`
}

// Messages is a page of messages.
type Messages struct {
	Page     `json:"pagination" xml:"pagination"`
	Stats    `json:"stats" xml:"stats"`
	ext.Meta `json:"meta" xml:"meta"`
	Items    []string `json:"items" xml:"items"`
}

// Query is keyed: its embedded structs are read field by field too.
type Query struct {
	Page    `json:"pagination" xml:"pagination"`
	Stats   `json:"stats" xml:"stats"`
	Channel string `json:"channel" xml:"channel"`
}

// List lists a channel's messages.
//
//idem:ttl=1h
func List(ctx context.Context, q Query) (Messages, error) {
	return Messages{
		Page:  Page{Page: q.Page.Page, Next: "n"},
		Stats: Stats{Page: q.Page.Page, Total: 3},
		Meta:  ext.Meta{Page: 2, Cursor: "c"},
		Items: []string{q.Channel},
	}, nil
}
