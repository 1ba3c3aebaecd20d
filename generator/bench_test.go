//go:build unix

package generator

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// BenchmarkGenerate1000 generates a package of 1,000 annotated functions
// (struct parameters with nested slices and maps, options on each) and, in
// the same run, builds that package with go build, reporting both times and
// their ratio. Build inputs are cached except for the package itself, as in
// an edit-generate-build loop:
//
//	go test ./generator -run '^$' -bench Generate1000 -benchtime 5x
func BenchmarkGenerate1000(b *testing.B) {
	mod := newScratch(b, "example.com/big")
	var src strings.Builder
	src.WriteString("package big\n\nimport (\n\t\"context\"\n\t\"time\"\n)\n\n")
	src.WriteString("type Line struct {\n\tSKU string\n\tQty int\n\tTags map[string]string\n}\n\n")
	for i := 0; i < 1000; i++ {
		fmt.Fprintf(&src, "type Req%d struct {\n\tID string\n\tAmount int64\n\tAt time.Time\n\tLines []Line\n\tNote *string\n}\n\n", i)
		fmt.Fprintf(&src, "type Res%d struct {\n\tID string\n\tTotal int64\n\tLines []Line\n}\n\n", i)
		opts := []string{"ttl=24h", "key=req.ID on_duplicate=wait", "on_failure=lock lease=1m", "exclude=req.Note name=big.f" + fmt.Sprint(i)}[i%4]
		fmt.Fprintf(&src, "// F%d is guarded.\n//\n//idem:%s\nfunc F%d(ctx context.Context, req Req%d, n int) (*Res%d, error) { return &Res%d{ID: req.ID}, nil }\n\n", i, opts, i, i, i, i)
	}
	writeB(b, filepath.Join(mod, "big.go"), []byte(src.String()))
	env := append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off")
	cfg := Config{Dir: mod, Env: env}

	// Warm the build cache (dependencies) and write the generated file once.
	files, err := Generate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	writeB(b, files[0].Path, files[0].Content)
	lines := strings.Count(string(files[0].Content), "\n")
	goBuild := func(i int) time.Duration {
		// A changed constant makes go build recompile this package (and
		// only it), as after an edit.
		writeB(b, filepath.Join(mod, "stamp.go"), []byte(fmt.Sprintf("package big\n\nconst stamp = %d\n", i)))
		start := time.Now()
		cmd := exec.Command("go", "build", ".")
		cmd.Dir, cmd.Env = mod, env
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("go build: %v\n%s", err, out)
		}
		return time.Since(start)
	}
	goBuild(-1)

	// Wall time depends on how busy the machine is; CPU time (user+system,
	// this process and its children: the go command) much less so.
	// Generation runs back to back (it type-checks the package itself, so
	// the build cache does not help it); the builds follow, timer stopped.
	var gen, build, genCPU, buildCPU time.Duration
	check := precheckTime.Load()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, cpu := time.Now(), cpuTime()
		files, err := Generate(cfg)
		gen += time.Since(start)
		genCPU += cpuTime() - cpu
		if err != nil || len(files) != 1 || files[0].Content == nil {
			b.Fatalf("Generate: %v", err)
		}
	}
	b.StopTimer()
	check = precheckTime.Load() - check
	for i := 0; i < b.N; i++ {
		cpu := cpuTime()
		build += goBuild(i)
		buildCPU += cpuTime() - cpu
	}
	n := float64(b.N)
	b.ReportMetric(gen.Seconds()/n, "generate-s/op")
	b.ReportMetric(build.Seconds()/n, "gobuild-s/op")
	b.ReportMetric(genCPU.Seconds()/n, "generate-cpu-s/op")
	b.ReportMetric(buildCPU.Seconds()/n, "gobuild-cpu-s/op")
	b.ReportMetric(float64(gen)/float64(build), "generate/build")
	// The pre-write check (precheck.go): the part of generate-s/op spent
	// type-checking the generated file before returning it.
	b.ReportMetric(time.Duration(check).Seconds()/n, "precheck-s/op")
	b.ReportMetric(float64(lines), "generated-lines")
}

// cpuTime is the user+system time of this process and its waited-for children.
func cpuTime() time.Duration {
	var self, kids syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &kids)
	tv := func(t syscall.Timeval) time.Duration { return time.Duration(t.Nano()) }
	return tv(self.Utime) + tv(self.Stime) + tv(kids.Utime) + tv(kids.Stime)
}

func writeB(b *testing.B, path string, data []byte) {
	b.Helper()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		b.Fatal(err)
	}
}
