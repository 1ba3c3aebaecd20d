// Package mnet has a connection that implements the interfaces it embeds
// (as a database driver's does) and holds what no key can read.
package mnet

type Streamer interface{ Stream() string }

type Describer interface{ Description() string }

// Connection is a variant of both unions, and cannot be keyed (Done).
type Connection struct {
	Streamer
	ID   string
	Done chan struct{}
}

func (c Connection) Description() string { return c.ID }

// Plain is a variant of both unions that can be keyed.
type Plain struct{ Name string }

func (Plain) Description() string { return "plain" }

func (Plain) Stream() string { return "plain" }
