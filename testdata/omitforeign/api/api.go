// Package api is an SDK (written for this test) whose list type holds
// undecodable values and unexported response metadata, as go-openai's
// ModelsList does.
package api

import "net/http"

type header struct{ h http.Header }

// Header returns the response's headers.
func (h header) Header() http.Header { return h.h }

// Model is a model of the list.
type Model struct {
	ID    string
	Group any // JSON of any shape: cannot be decoded to its dynamic type
}

// List is what listing returns.
type List struct {
	Models []Model
	header
}
