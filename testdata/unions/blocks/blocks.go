// Package blocks is a chat SDK's message model: a message holds blocks,
// a union of the package's block types behind an interface, as
// slack-go's Block does.
package blocks

import "context"

// Block is any block of a message.
type Block interface{ BlockType() string }

// Section is a block of text with nested elements.
type Section struct {
	Text     string
	Elements []Block
}

// Divider separates blocks.
type Divider struct{}

// Image shows a picture.
type Image struct {
	URL string
	Alt *string
}

func (Section) BlockType() string  { return "section" }
func (*Divider) BlockType() string { return "divider" }
func (*Image) BlockType() string   { return "image" }

// Message is what Post returns.
type Message struct {
	TS     string
	Blocks []Block
}

// Posts counts Post's runs.
var Posts int

// Post posts a message of the given blocks and returns it.
func Post(ctx context.Context, channel string, text string) (*Message, error) {
	Posts++
	alt := "logo"
	return &Message{TS: channel + "-1", Blocks: []Block{
		Section{Text: text, Elements: []Block{&Image{URL: "https://x/y.png"}, nil}},
		&Divider{},
		&Image{URL: "https://x/z.png", Alt: &alt},
	}}, nil
}
