package idemhook

import (
	"errors"
	"fmt"
	"time"
)

// Defaults of a Receiver.
const (
	// DefaultName is the Spec name of a Receiver without WithName.
	DefaultName = "idemhook"
	// DefaultMaxBodyBytes bounds the body a Receiver reads (1 MiB).
	DefaultMaxBodyBytes = 1 << 20
	// DefaultWait is how long a duplicate of a running delivery waits for
	// it before it is answered 409: under the shortest provider timeout
	// (Slack's 3 s).
	DefaultWait = 2 * time.Second
	// DefaultTTL is how long a handled delivery's ID is remembered: longer
	// than the providers' retry schedules (Stripe: 3 days, Standard
	// Webhooks senders: about 1.5 days).
	DefaultTTL = 7 * 24 * time.Hour
	// ReplayHeader marks the answer to a duplicate delivery.
	ReplayHeader = "Idempotent-Replayed"
)

// Option configures New.
type Option func(*config)

type config struct {
	name           string
	ttl            time.Duration
	wait           time.Duration
	acceptRunning  bool
	recordFailures bool
	maxBody        int64
}

// WithName sets the Spec name: the key space of the receiver's delivery
// IDs. Give each endpoint (each sender and secret) a name of its own, so
// that two senders' IDs never meet.
func WithName(name string) Option { return func(c *config) { c.name = name } }

// WithTTL sets how long a handled delivery's ID is remembered
// (DefaultTTL). Keep it longer than the sender's retry schedule.
func WithTTL(d time.Duration) Option { return func(c *config) { c.ttl = d } }

// WithMaxBodyBytes bounds the body read; a longer one is answered 413
// before it is verified (DefaultMaxBodyBytes).
func WithMaxBodyBytes(n int64) Option { return func(c *config) { c.maxBody = n } }

// WithInProgress sets the answer to a duplicate of a delivery that is
// still running: it waits up to wait for the first run (then gets its
// answer: 200 if it succeeded, or runs itself if the first failed and
// released the ID), and is answered 409 with Retry-After past it, which
// every provider retries. accept answers 202 at once instead, for
// providers that retry a slow delivery quickly and count only 2xx (Slack):
// the first run goes on, but if it then fails the provider has stopped
// retrying. The default is DefaultWait, not accept.
func WithInProgress(wait time.Duration, accept bool) Option {
	return func(c *config) { c.wait, c.acceptRunning = wait, accept }
}

// WithRecordFailures records a handler's error instead of releasing the
// ID: the delivery is answered 500 once, and its retries 200 with
// Idempotent-Replayed: failed, so the handler never runs twice for an ID
// (on_failure=lock). By default an error releases the ID and the
// provider's retry runs the handler again.
func WithRecordFailures() Option { return func(c *config) { c.recordFailures = true } }

func defaultConfig() config {
	return config{name: DefaultName, ttl: DefaultTTL, wait: DefaultWait, maxBody: DefaultMaxBodyBytes}
}

func (c *config) check() error {
	switch {
	case c.name == "":
		return errors.New("WithName: empty name")
	case c.ttl <= 0:
		return fmt.Errorf("WithTTL(%v): must be positive", c.ttl)
	case c.maxBody <= 0:
		return fmt.Errorf("WithMaxBodyBytes(%d): must be positive", c.maxBody)
	case c.wait < 0:
		return fmt.Errorf("WithInProgress(%v): negative wait", c.wait)
	}
	return nil
}
