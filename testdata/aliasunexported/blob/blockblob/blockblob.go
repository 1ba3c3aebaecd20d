// Package blockblob declares its request and response types unexported
// and exports them only through aliases, as some cloud SDKs do.
package blockblob

import "context"

type uploadFromReaderOptions struct {
	BlockSize   int64
	Concurrency uint16
	Metadata    map[string]*string
	Tier        *AccessTier
}

// UploadBufferOptions is the only name other packages have for the options.
type UploadBufferOptions = uploadFromReaderOptions

type AccessTier string

type uploadFromReaderResponse struct {
	ETag      *string
	RequestID *string
	Version   int64
}

// UploadBufferResponse is the only name other packages have for the response.
type UploadBufferResponse = uploadFromReaderResponse

// page is generic and unexported; Page is its exported generic alias.
type page[T any] struct {
	Items []T
	Next  *string
}

type Page[T any] = page[T]

type BlockClient struct{ name string }

func NewClient(name string) *BlockClient { return &BlockClient{name: name} }

func (c *BlockClient) UploadBuffer(ctx context.Context, buf []byte, o *UploadBufferOptions) (UploadBufferResponse, error) {
	etag := c.name + ":" + string(buf)
	return UploadBufferResponse{ETag: &etag, Version: int64(len(buf))}, nil
}

func (c *BlockClient) List(ctx context.Context, prefix string) (Page[string], error) {
	return Page[string]{Items: []string{prefix + "a"}}, nil
}
