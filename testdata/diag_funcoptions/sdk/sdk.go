// Package sdk is a cloud-SDK-style queue client (written for this test):
// calls take functional options, inputs and outputs embed an empty
// unexported marker, and outputs carry ResultMetadata whose state is
// unexported.
package sdk

import (
	"context"
	"fmt"
	"net/http"
)

// Options configure one call.
type Options struct {
	Region     string
	Retries    int
	HTTPClient interface {
		Do(*http.Request) (*http.Response, error)
	}
}

type noSmithyDocumentSerde struct{}

// SendMessageInput is what SendMessage takes.
type SendMessageInput struct {
	QueueURL   *string
	Body       *string
	Attributes map[string]string
	noSmithyDocumentSerde
}

// Metadata holds middleware results: nothing exported.
type Metadata struct{ values map[any]any }

// Get returns a value.
func (m Metadata) Get(k any) any { return m.values[k] }

// SendMessageOutput is what SendMessage returns.
type SendMessageOutput struct {
	MessageId      *string
	SequenceNumber *string
	ResultMetadata Metadata
	noSmithyDocumentSerde
}

// Client sends messages.
type Client struct{ sent int }

// Sent reports how many messages the client sent.
func (c *Client) Sent() int { return c.sent }

// SendMessage sends in.Body, shaped by optFns.
func (c *Client) SendMessage(ctx context.Context, in *SendMessageInput, optFns ...func(*Options)) (*SendMessageOutput, error) {
	o := Options{Region: "eu-west-1"}
	for _, f := range optFns {
		f(&o)
	}
	c.sent++
	id := fmt.Sprintf("%s-%d", o.Region, c.sent)
	return &SendMessageOutput{MessageId: &id, ResultMetadata: Metadata{values: map[any]any{"request-id": id}}}, nil
}
