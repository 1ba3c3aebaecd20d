// Package sdk is a fixture shaped like a cloud SDK's generated API types
// (written for these tests): inputs embed an empty unexported marker
// struct and carry a zero-length array that makes them incomparable. They
// hold no data, so the key skips them; the exported fields are keyed.
package sdk

// NoSerde marks a type as not serializable as a document.
type NoSerde struct{}

// noSmithyDocumentSerde is how generated inputs embed the marker: an
// unexported alias of an exported empty struct.
type noSmithyDocumentSerde = NoSerde

// noCopy is an unexported empty struct of this package.
type noCopy struct{}

// ObjectLockMode is an enum of strings, as SDKs generate them.
type ObjectLockMode string

// Tag is a key/value pair.
type Tag struct {
	Key   *string
	Value *string

	noSmithyDocumentSerde
}

// PutObjectInput is the input of PutObject.
type PutObjectInput struct {
	Bucket   *string
	Key      *string
	Body     []byte
	Metadata map[string]string
	Tags     []Tag
	Mode     ObjectLockMode
	Size     *int64

	noSmithyDocumentSerde
	nocopy    noCopy
	noCompare [0]func()
}
