package firestorestore

import "cloud.google.com/go/firestore"

// NewUnchecked is New without its reachability read, for tests of a
// store whose server does not answer.
func NewUnchecked(client *firestore.Client, collection string, opts ...Option) (*Store, error) {
	return build(client, collection, opts)
}
