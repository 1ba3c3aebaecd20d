// Package model is the other package named model.
package model

// Invoice of package b: same name, other fields.
type Invoice struct{ Cents int64 }
