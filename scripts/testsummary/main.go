// Command testsummary reads `go test -json` events on stdin, prints the usual one line per
// package plus the output of failing tests, and ends with a plain count line. CI reads that
// closing line; a terminal reader gets short output without -v noise.
//
// A package can fail without any test failing: it does not build (or vet), it times out (the
// running test gets no end event), or it dies outside a test (TestMain). Each such package
// counts as one failure in the closing line, which names it and why, so a timeout never
// reads "0 failed".
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
)

type event struct {
	Action      string
	Package     string
	ImportPath  string // build-output and build-fail events name the package this way
	Test        string
	Elapsed     float64
	Output      string
	FailedBuild string
}

type counts struct {
	passed, failed, skipped int
	// brokenPackages are the packages that failed as a whole (a build, a timeout, an exit),
	// failing tests or not, each as "<package> (<why>)"; each is also one of failed.
	brokenPackages []string
}

// line is the closing line; scripts/test.sh reads its first two numbers.
func (c counts) line() string {
	s := fmt.Sprintf("go tests: %d passed, %d failed, %d skipped", c.passed, c.failed, c.skipped)
	if len(c.brokenPackages) > 0 {
		s += "; packages that failed as a whole: " + strings.Join(c.brokenPackages, ", ")
	}
	return s
}

func main() {
	c, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	fmt.Println(c.line())
	if c.failed > 0 {
		os.Exit(1)
	}
}

// pkgState is what one package's events left so far.
type pkgState struct {
	output      map[string]*strings.Builder // by test ("" for the package): not yet replayed
	running     map[string]bool             // tests started, not ended and not paused
	failedTests int
	timedOut    bool
}

// summarize keeps each running test's output until it ends, so only failures are replayed.
func summarize(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	pkgs := map[string]*pkgState{}
	state := func(pkg string) *pkgState {
		p := pkgs[pkg]
		if p == nil {
			p = &pkgState{output: map[string]*strings.Builder{}, running: map[string]bool{}}
			pkgs[pkg] = p
		}
		return p
	}
	// Compiler and vet output, by the import path a failing package's FailedBuild names;
	// several test packages can share one broken dependency, whose errors print once.
	buildOut := map[string]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// Older go commands print build failures as plain text between the JSON lines.
			fmt.Fprintln(w, string(line))
			continue
		}
		switch e.Action {
		case "build-output":
			b := buildOut[e.ImportPath]
			if b == nil {
				b = &strings.Builder{}
				buildOut[e.ImportPath] = b
			}
			b.WriteString(e.Output)
			continue
		case "build-fail":
			continue
		}
		p := state(e.Package)
		switch e.Action {
		case "run", "cont":
			p.running[e.Test] = true
		case "pause":
			// A parallel test waiting for its turn is not running: a timeout is not its doing,
			// and Go's "running tests:" list leaves it out too.
			delete(p.running, e.Test)
		case "output":
			b := p.output[e.Test]
			if b == nil {
				b = &strings.Builder{}
				p.output[e.Test] = b
			}
			b.WriteString(e.Output)
			// The alarm's panic goes to the running test's output; that test never ends.
			if strings.HasPrefix(e.Output, "panic: test timed out after ") {
				p.timedOut = true
			}
		case "pass", "fail", "skip":
			if e.Test == "" {
				delete(pkgs, e.Package)
				if why := reportPackage(w, e, p, buildOut); why != "" {
					c.failed++
					c.brokenPackages = append(c.brokenPackages, e.Package+" ("+why+")")
				}
				continue
			}
			delete(p.running, e.Test)
			out := p.output[e.Test]
			delete(p.output, e.Test)
			switch e.Action {
			case "pass":
				c.passed++
			case "skip":
				c.skipped++
			case "fail":
				c.failed++
				p.failedTests++
				if out != nil {
					fmt.Fprint(w, out.String())
				}
			}
		}
	}
	return c, sc.Err()
}

// reportPackage prints the package's line and, when it failed, what it left unprinted (the
// build errors, a timeout's or a panic's trace); it returns why the package failed when
// failing tests do not say it, else "".
func reportPackage(w io.Writer, e event, p *pkgState, buildOut map[string]*strings.Builder) string {
	switch e.Action {
	case "pass":
		fmt.Fprintf(w, "ok   %s %.1fs\n", e.Package, e.Elapsed)
		return ""
	case "skip":
		fmt.Fprintf(w, "---  %s (no tests)\n", e.Package)
		return ""
	}
	why := failureReason(e, p)
	if why == "" {
		fmt.Fprintf(w, "FAIL %s %.1fs\n", e.Package, e.Elapsed)
	} else {
		fmt.Fprintf(w, "FAIL %s %.1fs: %s\n", e.Package, e.Elapsed, why)
	}
	if b := buildOut[e.FailedBuild]; b != nil {
		fmt.Fprint(w, b.String())
		delete(buildOut, e.FailedBuild)
	}
	// Output of tests that never ended, then what followed an ended test (a panic's trace),
	// then the package's own: the go command's FAIL line last, as it prints it.
	tests := make([]string, 0, len(p.output))
	for t := range p.output {
		if t != "" {
			tests = append(tests, t)
		}
	}
	sort.Strings(tests)
	for _, t := range append(tests, "") {
		if b := p.output[t]; b != nil {
			fmt.Fprint(w, b.String())
		}
	}
	return why
}

func failureReason(e event, p *pkgState) string {
	if e.FailedBuild != "" {
		// "example.com/p [example.com/p.test]" is the package's own test build.
		failed, _, _ := strings.Cut(e.FailedBuild, " ")
		if failed == e.Package {
			return "build failed"
		}
		return "build failed in " + failed
	}
	running := make([]string, 0, len(p.running))
	for t := range p.running {
		// A running subtest's parent is running too; the innermost says more.
		if hasRunningSubtest(p, t) {
			continue
		}
		running = append(running, t)
	}
	sort.Strings(running)
	switch {
	case p.timedOut && len(running) > 0:
		return "timed out in " + strings.Join(running, ", ")
	case p.timedOut:
		return "timed out"
	case len(running) > 0:
		return "exited during " + strings.Join(running, ", ")
	case p.failedTests == 0:
		return "failed outside any test"
	}
	return ""
}

func hasRunningSubtest(p *pkgState, t string) bool {
	for other := range p.running {
		if strings.HasPrefix(other, t+"/") {
			return true
		}
	}
	return false
}
