package generator

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// The random type graph test: packages of random types, and a sub-package
// of each with the shapes that once broke the generated file (exported
// aliases of unexported types, generic aliases, unions one of whose
// variants cannot be keyed, recursive types, interfaces reached only
// through excluded paths, generic functions whose type parameter is only
// in a func parameter), every function annotated as a new user would.
// Whatever the generator makes of them, every file it returns must
// type-check (checked here by go/packages, apart from the generator's own
// check), no function may be refused as a generator defect, and every
// annotation must end in a wrapper or a diagnostic. Refused functions are
// then dropped, as a user would, and the rest generated and checked again.

// graphGen writes one random package and its sub-package.
type graphGen struct {
	r   *rand.Rand
	own []string // declarations
	n   int
}

// subTypes are the sub-package's type expressions as the package names
// them; each is declared once by subDecls.
var subTypes = []string{"sub.Resp", "sub.Opts", "sub.Page[string]", "sub.Page[int64]", "sub.Pages", "sub.Node", "sub.Event", "sub.Conn", "*sub.Conn", "sub.Plain", "sub.Tier", "sub.Wrapped"}

// subDecls is the sub-package: aliases of unexported types (plain,
// generic, of an instance), a union with an unkeyable variant whose
// helper another union's names, a recursive type, a struct with an
// unexported field.
const subDecls = `
type resp struct {
	ETag    *string
	Version int64
	Tags    map[string]string
}

type Resp = resp

type opts struct {
	BlockSize int64
	Tier      *Tier
	Meta      map[string]*string
}

type Opts = opts

type Tier string

type page[T any] struct {
	Items []T
	Next  *string
}

type Page[T any] = page[T]

type Pages = page[string]

type Node struct {
	Name string
	Kids []*Node
	Next *Node
}

type Streamer interface{ Stream() string }

type Event interface{ Describe() string }

type Conn struct {
	Streamer
	ID   string
	Done chan struct{}
}

func (c Conn) Describe() string { return c.ID }

type Plain struct{ Name string }

func (Plain) Describe() string { return "plain" }

func (Plain) Stream() string { return "plain" }

type Wrapped struct {
	Name  string
	inner *Conn
}

type Client struct{ name string }
`

func (g *graphGen) name(base string) string {
	g.n++
	return base + strconv.Itoa(g.n)
}

// typ returns a random type expression of the package, declaring the
// own types it uses.
func (g *graphGen) typ(depth int) string {
	if depth >= 3 || g.r.IntN(3) == 0 {
		return g.leaf()
	}
	switch g.r.IntN(8) {
	case 0:
		return "*" + g.typ(depth+1)
	case 1:
		return "[]" + g.typ(depth+1)
	case 2:
		return "map[string]" + g.typ(depth+1)
	case 3:
		// The package's own unexported type, under an exported alias.
		n := g.name("own")
		g.own = append(g.own, fmt.Sprintf("type %s struct {\n\tA %s\n\tB %s\n}\n\ntype %s = %s", n, g.typ(depth+1), g.typ(depth+1), strings.ToUpper(n[:1])+n[1:], n))
		return strings.ToUpper(n[:1]) + n[1:]
	case 4:
		n := g.name("S")
		g.own = append(g.own, fmt.Sprintf("type %s struct {\n\tF %s\n\tG %s\n\tsub.Plain\n}", n, g.typ(depth+1), g.typ(depth+1)))
		return n
	case 5:
		return fmt.Sprintf("sub.Page[%s]", g.typ(depth+1))
	}
	return subTypes[g.r.IntN(len(subTypes))]
}

func (g *graphGen) leaf() string {
	leaves := []string{"string", "int64", "bool", "float64", "[]byte", "time.Time", "any", "func()", "chan int"}
	if g.r.IntN(2) == 0 {
		return subTypes[g.r.IntN(len(subTypes))]
	}
	return leaves[g.r.IntN(len(leaves))]
}

// graphFunc is one annotated function of a random package, with the lines
// of its declaration.
type graphFunc struct {
	src        string
	start, end int
}

// funcs draws the package's functions.
func (g *graphGen) funcs(n int) []string {
	var out []string
	for i := range n {
		param, result := g.typ(0), g.typ(0)
		opts := "ttl=1h"
		switch g.r.IntN(4) {
		case 0:
			opts += " exclude=v"
		case 1:
			opts += " omit=r1"
		}
		out = append(out, fmt.Sprintf("// F%d keys a %s and returns a %s.\n//\n//idem:%s\nfunc F%d(ctx context.Context, id string, v %s) (%s, error) {\n\tvar r %s\n\treturn r, nil\n}", i, param, result, opts, i, param, result, result))
	}
	out = append(out,
		"//idem:ttl=24h\nfunc ForEach[T any](s *sub.Node, fn func(component T) error) error { return nil }",
		"//idem:ttl=24h\nfunc WithConn(ctx context.Context, c *sub.Wrapped, e sub.Event, fn func(context.Context) error) error { return nil }",
		"//idem:ttl=24h\nvar _ = (*sub.Client).Upload",
		"//idem:ttl=24h\nvar _ = (*sub.Client).List",
	)
	return out
}

// write writes package pkg of seed under dir, without the functions of
// drop, and returns the line range of each function.
func writeGraph(t *testing.T, dir, pkg string, seed uint64, drop map[int]bool) []graphFunc {
	g := &graphGen{r: rand.New(rand.NewPCG(seed, 0x677261))}
	fns := g.funcs(8)
	subSrc := "// Package sub has the shapes that broke generated files.\npackage sub\n\nimport \"context\"\n" + subDecls +
		"\nfunc (c *Client) Upload(ctx context.Context, buf []byte, o *Opts) (Resp, error) { return Resp{}, nil }\n" +
		"\nfunc (c *Client) List(ctx context.Context, prefix string) (Pages, error) { return Pages{}, nil }\n"
	write(t, filepath.Join(dir, pkg, "sub", "sub.go"), []byte(subSrc))
	var b strings.Builder
	fmt.Fprintf(&b, "// Package %s holds random types (seed %d).\npackage %s\n\nimport (\n\t\"context\"\n\t\"time\"\n\n\t\"github.com/idemgen/idemgen/generator/testdata/%s/%s/sub\"\n)\n\nvar _ time.Time\n",
		pkg, seed, pkg, filepath.Base(dir), pkg)
	for _, d := range g.own {
		b.WriteString("\n" + d + "\n")
	}
	var out []graphFunc
	for i, f := range fns {
		if drop[i] {
			out = append(out, graphFunc{})
			continue
		}
		start := strings.Count(b.String(), "\n") + 2
		b.WriteString("\n" + f + "\n")
		out = append(out, graphFunc{src: f, start: start, end: strings.Count(b.String(), "\n")})
	}
	write(t, filepath.Join(dir, pkg, pkg+".go"), []byte(b.String()))
	return out
}

// TestRandomTypeGraphs generates IDEM_TYPEGRAPH_SEEDS random packages
// (default 6, from the clock: a run reports its seeds; IDEM_TYPEGRAPH_SEED
// reproduces a list).
func TestRandomTypeGraphs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: writes and loads scratch packages")
	}
	seeds := graphSeeds(t)
	t.Logf("seeds (IDEM_TYPEGRAPH_SEED=…): %s", strings.Trim(fmt.Sprint(seeds), "[]"))
	dir, err := os.MkdirTemp("testdata", "typegraph-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	root, _ := filepath.Abs("..")
	drops := map[string]map[int]bool{}
	// The analysis decides the helpers the writers write (analyze_helpers.go).
	helpersWritten = func(fp *filePlan, written []helperPlan) {
		if diff := cmp.Diff(fp.Helpers, written, cmpopts.EquateEmpty()); diff != "" {
			t.Errorf("%s: helpers written differ from the plan's (-plan +written):\n%s", fp.Package, diff)
		}
	}
	t.Cleanup(func() { helpersWritten = nil })
	for round := 1; round <= 2; round++ {
		layout := map[string][]graphFunc{}
		var patterns []string
		for _, s := range seeds {
			pkg := fmt.Sprintf("p%d", s)
			if drops[pkg] == nil {
				drops[pkg] = map[int]bool{}
			}
			layout[pkg] = writeGraph(t, dir, pkg, s, drops[pkg])
			os.Remove(filepath.Join(dir, pkg, DefaultOutput)) // the last round's
			patterns = append(patterns, "./generator/"+filepath.ToSlash(filepath.Join(dir, pkg)))
		}
		var files []File
		var gerr *Error
		left := collectUnaccounted(func() {
			files, err = Generate(Config{Dir: root, Patterns: patterns})
		})
		if err != nil && !errors.As(err, &gerr) {
			t.Fatalf("round %d: Generate: %v", round, err)
		}
		for _, p := range left {
			t.Errorf("round %d: %s: annotation with neither a wrapper nor a diagnostic", round, p)
		}
		checkGraphOutput(t, root, files, patterns, round)
		if gerr == nil {
			break
		}
		var diags []string
		for _, d := range gerr.Diagnostics {
			diags = append(diags, d.String())
			if strings.Contains(d.Msg, "idemgen defect") {
				t.Errorf("round %d: %s", round, d)
			}
			// Drop the refused function, as a user would.
			m := regexp.MustCompile(`/(p\d+)/p\d+\.go$`).FindStringSubmatch(d.Pos.Filename)
			if m == nil {
				continue
			}
			for i, f := range layout[m[1]] {
				if f.src != "" && d.Pos.Line >= f.start && d.Pos.Line <= f.end {
					drops[m[1]][i] = true
				}
			}
		}
		for _, b := range nonMinimalAdvice(diags) {
			t.Errorf("round %d: %s", round, b)
		}
	}
}

func graphSeeds(t *testing.T) []uint64 {
	if list := os.Getenv("IDEM_TYPEGRAPH_SEED"); list != "" {
		var seeds []uint64
		for _, f := range strings.Split(list, ",") {
			s, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			seeds = append(seeds, s)
		}
		return seeds
	}
	n, _ := strconv.Atoi(os.Getenv("IDEM_TYPEGRAPH_SEEDS"))
	if n <= 0 {
		n = 6
	}
	base := uint64(time.Now().UnixNano())
	seeds := make([]uint64, n)
	for i := range seeds {
		seeds[i] = base + uint64(i)
	}
	return seeds
}

// checkGraphOutput writes the generated files and type-checks their
// packages from source, bodies and all.
func checkGraphOutput(t *testing.T, root string, files []File, patterns []string, round int) {
	t.Helper()
	for _, f := range files {
		if f.Content != nil {
			write(t, f.Path, f.Content)
		}
	}
	// go vet, not an in-process packages.Load: the compiler checks the
	// wrappers' bodies too, and go/types races when it type-checks several
	// importers of one export-data alias at once (golang/go#79035; -race
	// reported it here on the runtime's idemimpl aliases).
	vet := exec.Command("go", append([]string{"vet"}, patterns...)...)
	vet.Dir = root
	if out, err := vet.CombinedOutput(); err != nil {
		t.Errorf("round %d: the generated packages do not pass go vet: %v\n%s", round, err, out)
	}
	t.Logf("round %d: %d packages, %d generated files", round, len(patterns), len(files))
}
