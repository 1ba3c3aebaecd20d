// Package model is one of two packages named model: instances over their
// types must get helpers of their own.
package model

// Invoice of package a.
type Invoice struct{ Number string }
