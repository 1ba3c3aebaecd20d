// Package blob re-exports its sub-package's aliases under aliases of its own.
package blob

import (
	"context"

	"github.com/idemgen/idemgen/testdata/aliasunexported/blob/blockblob"
)

type UploadBufferOptions = blockblob.UploadBufferOptions

type UploadBufferResponse = blockblob.UploadBufferResponse

type Client struct{ bb *blockblob.BlockClient }

func NewClient(name string) *Client { return &Client{bb: blockblob.NewClient(name)} }

func (c *Client) UploadBuffer(ctx context.Context, container string, buf []byte, o *UploadBufferOptions) (UploadBufferResponse, error) {
	return c.bb.UploadBuffer(ctx, buf, o)
}

type listResponse struct {
	Names []string
	More  bool
}

// ListResponse aliases an unexported type of this same package.
type ListResponse = listResponse

func (c *Client) List(ctx context.Context, container string) (ListResponse, error) {
	return ListResponse{Names: []string{container}}, nil
}

// Pages is an alias of another package's generic alias.
type Pages = blockblob.Page[string]

func (c *Client) Pages(ctx context.Context, prefix string) (Pages, error) {
	return c.bb.List(ctx, prefix)
}
