package p

import "context"

type Token struct{ v string }

func (t Token) MarshalJSON() ([]byte, error) { return []byte(`"x"`), nil }

type Level struct{ n int }

func (l Level) MarshalText() ([]byte, error) { return nil, nil }

// F returns a type that marshals but cannot unmarshal; G likewise with text.
//
//idem:ttl=1h
func F(ctx context.Context) (Token, error) { return Token{}, nil }

//idem:ttl=1h
func G(ctx context.Context) (*Level, error) { return nil, nil }
