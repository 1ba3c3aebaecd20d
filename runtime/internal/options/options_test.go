package options

import (
	"errors"
	"testing"
)

type config struct{ n int }

type option func(*config)

func (c *config) check() error {
	if c.n < 0 {
		return errors.New("n below zero")
	}
	return nil
}

func TestApply(t *testing.T) {
	add := func(d int) option { return func(c *config) { c.n += d } }
	for _, tc := range []struct {
		opts    []option
		want    int
		wantErr string
	}{
		{nil, 1, ""},
		{[]option{add(2), add(3)}, 6, ""},
		{[]option{add(-2)}, -1, "pkg: n below zero"},
	} {
		got, err := Apply("pkg", config{n: 1}, tc.opts, (*config).check)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("Apply = %v, want error %q", err, tc.wantErr)
			}
			continue
		}
		if err != nil || got.n != tc.want {
			t.Errorf("Apply = %d, %v; want %d", got.n, err, tc.want)
		}
	}
}
