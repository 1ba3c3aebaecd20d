// Package option is an SDK's request options.
package option

// Config is what options set.
type Config struct{ Retries int }

// RequestOption is a functional option as a named func type.
type RequestOption func(*Config)

// ClientOption is a functional option as an interface.
type ClientOption interface{ Apply(*Config) }

// Retries sets the retries.
type Retries int

// Apply sets them.
func (r Retries) Apply(c *Config) { c.Retries = int(r) }
