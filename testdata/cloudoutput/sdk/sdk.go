// Package sdk is a cloud-SDK-style client (written for this test): outputs
// carry ResultMetadata, whose state is an unexported map.
package sdk

// Metadata holds middleware results: nothing exported.
type Metadata struct {
	values map[any]any
}

// Set stores a value.
func (m *Metadata) Set(k, v any) {
	if m.values == nil {
		m.values = map[any]any{}
	}
	m.values[k] = v
}

// Get returns a value.
func (m Metadata) Get(k any) any { return m.values[k] }

type noSmithyDocumentSerde struct{}

// PutObjectOutput is what PutObject returns.
type PutObjectOutput struct {
	ETag           *string
	VersionId      *string
	Size           *int64
	Checksums      map[string]string
	ResultMetadata Metadata
	noSmithyDocumentSerde
}
