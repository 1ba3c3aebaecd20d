// Package broker is a message broker client whose responses carry
// per-partition errors in fields of type error, as kafka-go's do: a code
// type, sometimes wrapped with the broker's message.
package broker

import (
	"context"
	"errors"
	"fmt"
)

// Error is a broker error code.
type Error int16

func (e Error) Error() string { return fmt.Sprintf("broker error %d", int16(e)) }

// Codes the broker returns.
const (
	UnknownTopic   Error = 3
	NotLeader      Error = 6
	MessageTooLong Error = 10
)

// ErrClosed is returned for a partition whose producer was closed.
var ErrClosed = errors.New("broker: producer closed")

// Partition is one partition's outcome.
type Partition struct {
	ID    int
	Error error
}

// ProduceResponse is what Produce returns.
type ProduceResponse struct {
	Partitions []Partition
	Throttle   int
}

// Produced counts Produce's runs.
var Produced int

// Produce sends messages to a topic's partitions; each partition's error
// is a code, a code wrapped with a message, the closed sentinel, or an
// error of no known type.
func Produce(ctx context.Context, topic string, partitions int) (*ProduceResponse, error) {
	Produced++
	r := &ProduceResponse{Throttle: 5}
	for i := range partitions {
		p := Partition{ID: i}
		switch i % 5 {
		case 1:
			p.Error = UnknownTopic
		case 2:
			p.Error = fmt.Errorf("%w: topic %s has no leader", NotLeader, topic)
		case 3:
			p.Error = ErrClosed
		case 4:
			p.Error = errors.Join(MessageTooLong, fmt.Errorf("message %d", i))
		}
		r.Partitions = append(r.Partitions, p)
	}
	return r, nil
}
