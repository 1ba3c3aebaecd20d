package imported

import (
	"context"
	"image"
	"image/color"
	"testing"
)

func TestImported(t *testing.T) {
	ctx := context.Background()
	api := NewIdempotent(newGuard(t))
	r := image.Rect(0, 0, 10, 10)
	a, _ := api.Crop(ctx, r, image.Pt(1, 1), color.RGBA{R: 1})
	b, _ := api.Crop(ctx, r, image.Pt(1, 1), color.RGBA{R: 1})
	if a != b || runs.Load() != 1 {
		t.Fatalf("replay %v %v ran %d", a, b, runs.Load())
	}
	api.Crop(ctx, r, image.Pt(1, 2), color.RGBA{R: 1})
	api.Crop(ctx, r, image.Pt(1, 2), color.RGBA{R: 2})
	if n := runs.Load(); n != 3 {
		t.Fatalf("ran %d times", n)
	}
}
