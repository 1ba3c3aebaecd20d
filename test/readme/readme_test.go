// Package readme follows README.md literally, as a new user would: in a
// scratch module outside the repository it runs the README's shell
// blocks (the local-checkout set-up, go generate, go run), writes its Go
// files, checks the generated code it shows against what idemgen really
// wrote, and runs each store's set-up snippet against a real store.
//
// README.md marks what this test reads with an HTML comment on the line
// before a fenced block:
//
//	<!-- readme-test: shell -->          run it (bash) in the scratch module
//	<!-- readme-test: file PATH -->      write it to PATH
//	<!-- readme-test: output -->         the previous shell block's stdout
//	<!-- readme-test: generated PATH --> an excerpt of the generated PATH:
//	                                     each run of lines between "// …"
//	                                     lines appears in it, in order
//	<!-- readme-test: snippet STORE -->  a store's set-up: statements that
//	                                     define g (*idem.Guard) after their
//	                                     imports; run with the README's
//	                                     wrapper on that store
package readme

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/idemgen/idemgen/internal/testenv"
)

type block struct {
	kind, arg string
	line      int // of the opening fence
	text      string
}

var markRE = regexp.MustCompile(`^<!-- readme-test: (\w+)(?: (\S+))? -->$`)

// parse returns README's marked blocks in order.
func parse(t *testing.T, readme string) []block {
	t.Helper()
	lines := strings.Split(readme, "\n")
	var out []block
	for i := 0; i < len(lines); i++ {
		m := markRE.FindStringSubmatch(lines[i])
		if m == nil {
			continue
		}
		if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "```") {
			t.Fatalf("README.md:%d: %s is not followed by a fenced block", i+1, lines[i])
		}
		end := i + 2
		for end < len(lines) && lines[end] != "```" {
			end++
		}
		if end == len(lines) {
			t.Fatalf("README.md:%d: unterminated block", i+2)
		}
		out = append(out, block{kind: m[1], arg: m[2], line: i + 2, text: strings.Join(lines[i+2:end], "\n") + "\n"})
		i = end
	}
	return out
}

// excerptOf reports whether every run of lines of excerpt between "// …"
// lines appears in file, in order.
func excerptOf(excerpt, file string) error {
	at := 0
	for _, chunk := range regexp.MustCompile(`(?m)^\s*// …\n`).Split(excerpt, -1) {
		if strings.TrimSpace(chunk) == "" {
			continue
		}
		i := strings.Index(file[at:], chunk)
		if i < 0 {
			return fmt.Errorf("not in the generated file (after what matched before it):\n%s", chunk)
		}
		at += i + len(chunk)
	}
	return nil
}

var importRE = regexp.MustCompile(`(?s)^\s*import (?:\((.*?)\)|("[^"]+"))\n`)

// program wraps a store snippet into a command that runs the README's
// wrapper twice on the snippet's guard.
func program(snippet, orderID string) string {
	imports := []string{`"context"`, `"fmt"`, `"os"`, `"example.com/shop/billing"`, `"github.com/idemgen/idemgen/runtime/idem"`}
	if m := importRE.FindStringSubmatch(snippet); m != nil {
		for _, line := range strings.Split(m[1]+m[2], "\n") {
			if line = strings.TrimSpace(line); line != "" && !slices.Contains(imports, line) {
				imports = append(imports, line)
			}
		}
		snippet = snippet[len(m[0]):]
	}
	return fmt.Sprintf(`package main

import (
	%s
)

func main() {
	if err := run(context.Background()); err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context) error {
%s
	return twice(ctx, g)
}

func twice(ctx context.Context, g *idem.Guard) error {
	req := billing.ChargeRequest{CustomerID: "cus_readme", OrderID: %q, AmountCents: 100}
	for range 2 {
		r, err := billing.NewIdempotent(g).Charge(ctx, req)
		if err != nil {
			return err
		}
		fmt.Println(r.ID)
	}
	return nil
}
`, strings.Join(imports, "\n\t"), snippet, orderID)
}

// The first screen takes a newcomer from nothing to a wrapped function that
// runs: every block up to the first output (the function's file, main.go,
// the shell commands, what they print) ends within firstScreen lines, before
// the first section heading.
const firstScreen = 60

func TestFirstScreen(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join(testenv.Root(), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(readme), "\n")
	var end int // the line of the first output block's closing fence
	for _, b := range parse(t, string(readme)) {
		if b.kind == "output" {
			end = b.line + strings.Count(b.text, "\n") + 1
			break
		}
	}
	heading := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "## ") }) + 1
	switch {
	case end == 0:
		t.Fatal("README.md has no output block: the first screen never runs the wrapper")
	case end > firstScreen:
		t.Errorf("README.md: the first screen runs the wrapper at line %d, want <= %d", end, firstScreen)
	case heading > 0 && heading < end:
		t.Errorf("README.md:%d: a section heading comes before the wrapper runs (line %d)", heading, end)
	}
}

func TestReadme(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: builds a module")
	}
	root := testenv.Root()
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	mod := t.TempDir()
	env := append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	sh := func(b block) string {
		t.Helper()
		script := strings.ReplaceAll(b.text, "/path/to/idemgen", root)
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", script)
		cmd.Dir, cmd.Env = mod, env
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("README.md:%d: %v\n%s\nstdout:\n%s\nstderr:\n%s", b.line, err, script, out, stderr.String())
		}
		return string(out)
	}
	// run runs a command in the scratch module and returns its combined
	// output; t is the (sub)test that fails if it does.
	run := func(t *testing.T, args ...string) string {
		t.Helper()
		cmd := exec.Command(args[0], args[1:]...)
		cmd.Dir, cmd.Env = mod, env
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	run(t, "go", "mod", "init", "example.com/shop")

	var last string // stdout of the last shell block
	kinds := map[string]int{}
	for _, b := range parse(t, string(readme)) {
		kinds[b.kind]++
		switch b.kind {
		case "shell":
			last = sh(b)
		case "output":
			if diff := cmp.Diff(b.text, last); diff != "" {
				t.Errorf("README.md:%d: the output shown differs from the real one (-README +real):\n%s", b.line, diff)
			}
		case "file":
			path := filepath.Join(mod, b.arg)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(b.text), 0o644); err != nil {
				t.Fatal(err)
			}
		case "generated":
			gen, err := os.ReadFile(filepath.Join(mod, b.arg))
			if err != nil {
				t.Fatalf("README.md:%d: %v (does a shell block before it run go generate?)", b.line, err)
			}
			if err := excerptOf(b.text, string(gen)); err != nil {
				t.Errorf("README.md:%d: the generated code shown differs from %s: %v", b.line, b.arg, err)
			}
		case "snippet":
			t.Run(b.arg, func(t *testing.T) {
				snippet := b.text
				switch b.arg {
				case "redis":
					addr := testenv.RedisAddr()
					testenv.Need(t, "Redis at "+addr, "Start it: redis-server --port 6379, or set IDEM_REDIS_ADDR.", dial(addr))
					snippet = strings.ReplaceAll(snippet, `"localhost:6379"`, fmt.Sprintf("%q", addr))
				case "postgres":
					url := testenv.PostgresURL()
					testenv.Need(t, "PostgreSQL at "+url, "Start it (trust auth, database test), or set IDEM_POSTGRES_URL.", dialURL(url))
					snippet = strings.ReplaceAll(snippet, `os.Getenv("DATABASE_URL")`, fmt.Sprintf("%q", url))
				case "file":
					snippet = strings.ReplaceAll(snippet, `"/var/lib/shop/idem"`, fmt.Sprintf("%q", t.TempDir()))
				}
				dir := filepath.Join("readmecheck", b.arg)
				if err := os.MkdirAll(filepath.Join(mod, dir), 0o755); err != nil {
					t.Fatal(err)
				}
				order := fmt.Sprintf("ord_%d", time.Now().UnixNano())
				if err := os.WriteFile(filepath.Join(mod, dir, "main.go"), []byte(program(snippet, order)), 0o644); err != nil {
					t.Fatal(err)
				}
				run(t, "go", "mod", "tidy")
				out := run(t, "go", "run", "./"+dir)
				want := fmt.Sprintf("charging %s\nrcpt_%s\nrcpt_%s\n", order, order, order)
				if diff := cmp.Diff(want, out); diff != "" {
					t.Errorf("README.md:%d: the %s snippet with the README's wrapper (-want +got):\n%s", b.line, b.arg, diff)
				}
			})
		default:
			t.Errorf("README.md:%d: unknown readme-test kind %q", b.line, b.kind)
		}
	}
	for _, k := range []string{"shell", "file", "output", "generated", "snippet"} {
		if kinds[k] == 0 {
			t.Errorf("README.md has no %q block: the test would prove nothing about it", k)
		}
	}
}

func dial(addr string) error {
	c, err := (&net.Dialer{Timeout: 2 * time.Second}).Dial("tcp", addr)
	if err == nil {
		c.Close()
	}
	return err
}

func dialURL(url string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err == nil {
		conn.Close(ctx)
	}
	return err
}
