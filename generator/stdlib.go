package generator

import (
	"bytes"
	"fmt"
	"go/types"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
)

// The standard library is told apart by where its packages live, never by
// how their paths are spelt: `go mod init myapp` names a module without a
// dot, and its packages' paths then look like the standard library's
// (myapp/billing beside net/http). The go command decides the same way: a
// package in GOROOT/src is the standard library's, and no module's
// package lives there.

// stdLib answers whether a package is the standard library's, for the Go
// installation the go command of the run uses.
type stdLib struct {
	src string // GOROOT/src
	mu  sync.Mutex
	is  map[string]bool // by import path
}

// newStdLib asks the go command (run in dir with env, as the loader runs
// it) for its GOROOT. A dir that does not exist (a caller that type-checked
// files of its own, such as idemvet's tests) runs it where the process is.
func newStdLib(dir string, env []string) (*stdLib, error) {
	cmd := exec.Command("go", "env", "GOROOT")
	if fi, err := os.Stat(dir); dir != "" && (err != nil || !fi.IsDir()) {
		dir = ""
	}
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	root := string(bytes.TrimSpace(out))
	if err != nil || root == "" {
		return nil, fmt.Errorf("idemgen: finding GOROOT (go env GOROOT): %v %s", err, bytes.TrimSpace(stderr.Bytes()))
	}
	return &stdLib{src: filepath.Join(root, "src"), is: map[string]bool{}}, nil
}

// has reports whether p is a standard library package.
func (s *stdLib) has(p *types.Package) bool {
	if p == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	path := p.Path()
	is, ok := s.is[path]
	if !ok {
		fi, err := os.Stat(filepath.Join(s.src, filepath.FromSlash(path)))
		is = err == nil && fi.IsDir()
		s.is[path] = is
	}
	return is
}
