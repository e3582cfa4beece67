// Command testsummary reads `go test -json` events on stdin, prints the usual one line per
// package plus the output of failing tests, and ends with a plain count line. CI reads that
// closing line; a terminal reader gets short output without -v noise.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

type event struct {
	Action  string
	Package string
	Test    string
	Elapsed float64
	Output  string
}

type counts struct{ passed, failed, skipped int }

func main() {
	c, err := summarize(os.Stdin, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "testsummary:", err)
		os.Exit(2)
	}
	fmt.Printf("go tests: %d passed, %d failed, %d skipped\n", c.passed, c.failed, c.skipped)
	if c.failed > 0 {
		os.Exit(1)
	}
}

// summarize keeps each running test's output until it ends, so only failures are replayed.
func summarize(r io.Reader, w io.Writer) (counts, error) {
	var c counts
	pending := map[string]*strings.Builder{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1024*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var e event
		if err := json.Unmarshal(line, &e); err != nil {
			// go test prints build failures as plain text before any JSON.
			fmt.Fprintln(w, string(line))
			continue
		}
		key := e.Package + "\x00" + e.Test
		switch e.Action {
		case "output":
			b := pending[key]
			if b == nil {
				b = &strings.Builder{}
				pending[key] = b
			}
			b.WriteString(e.Output)
		case "pass", "fail", "skip":
			out := pending[key]
			delete(pending, key)
			if e.Test == "" {
				reportPackage(w, e, out)
				continue
			}
			switch e.Action {
			case "pass":
				c.passed++
			case "skip":
				c.skipped++
			case "fail":
				c.failed++
				if out != nil {
					fmt.Fprint(w, out.String())
				}
			}
		}
	}
	return c, sc.Err()
}

func reportPackage(w io.Writer, e event, out *strings.Builder) {
	switch e.Action {
	case "pass":
		fmt.Fprintf(w, "ok   %s %.1fs\n", e.Package, e.Elapsed)
	case "skip":
		fmt.Fprintf(w, "---  %s (no tests)\n", e.Package)
	case "fail":
		fmt.Fprintf(w, "FAIL %s %.1fs\n", e.Package, e.Elapsed)
		// A package-level failure (build error, panic outside a test) has no test to blame.
		if out != nil {
			fmt.Fprint(w, out.String())
		}
	}
}
