// Package ext is a fixture (written for these tests): another package's
// struct with the same json tags as the structs embedded beside it.
package ext

// Meta is response metadata.
type Meta struct {
	Page   int    `json:"page" xml:"page"`
	Cursor string `json:"cursor" xml:"cursor"`
}
