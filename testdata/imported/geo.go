// Package imported: key and result types from other packages (image.Point
// and image.Rectangle get helpers named after their package).
package imported

import (
	"context"
	"image"
	"image/color"
	"sync/atomic"
)

var runs atomic.Int64

// Crop returns the cropped bounds.
//
//idem:on_duplicate=return
func Crop(ctx context.Context, r image.Rectangle, at image.Point, bg color.RGBA) (image.Rectangle, error) {
	runs.Add(1)
	return r.Add(at), nil
}
