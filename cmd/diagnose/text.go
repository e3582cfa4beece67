package main

import (
	"fmt"
	"io"
	"regexp"
	"strings"
	"time"

	"github.com/inferscope/sagemaker-datasource/pkg/diagnosis"
)

// width is where text wraps: a common terminal.
const width = 100

// requestID is the per-request part of an upstream error (pkg/promclient appends it).
var requestID = regexp.MustCompile(` \[request id [^\]]*\]`)

// printText writes the report for a terminal: a header, then each finding as a block whose
// labels line up, most important first.
func printText(w io.Writer, r diagnosis.Report) {
	fmt.Fprintf(w, "Diagnosis of the %s, %s → %s (%s), %d CloudWatch requests\n",
		r.Scope, r.Start.UTC().Format("2006-01-02 15:04"), r.End.UTC().Format("15:04 MST"), r.End.Sub(r.Start).Round(time.Minute), r.Requests)
	switch {
	case len(r.Findings) > 0:
	case len(r.Failures) == 0:
		fmt.Fprintln(w, "\nNo likely cause found: no rule fired over this scope and range.")
	default:
		fmt.Fprintln(w, "\nNo likely cause found among the rules that could run.")
	}
	for i, f := range r.Findings {
		fmt.Fprintf(w, "\n%2d. %-8s %s\n", i+1, strings.ToUpper(f.Severity.String()), f.Cause)
		field(w, "scope", f.Target.String())
		field(w, "summary", f.Summary)
		for j, e := range f.Evidence {
			label := ""
			if j == 0 {
				label = "evidence"
			}
			field(w, label, e.What+": "+e.Value)
		}
		field(w, "next", f.Next)
		if f.PanelLink != "" {
			field(w, "panel", f.PanelLink)
		}
	}
	for _, m := range r.Warnings {
		fmt.Fprintf(w, "\nwarning: %s\n", m)
	}
	// Failures usually share one cause (credentials, network): say it once, with the first
	// request id (they differ per request).
	var causes []string
	rules, first := map[string][]string{}, map[string]string{}
	for _, f := range r.Failures {
		k := requestID.ReplaceAllString(f.Error, "")
		if rules[k] == nil {
			causes = append(causes, k)
			first[k] = f.Error
		}
		rules[k] = append(rules[k], f.Rule)
	}
	for _, c := range causes {
		fmt.Fprintln(w)
		field(w, "failed", strings.Join(rules[c], ", ")+" "+diagnosis.NotEvaluated)
		field(w, "because", first[c])
	}
}

// field writes "    label     text", wrapping text under itself.
func field(w io.Writer, label, text string) {
	const indent = 4 + 10
	lines := wrap(text, width-indent)
	for i, l := range lines {
		if i > 0 {
			label = ""
		}
		fmt.Fprintf(w, "    %-10s%s\n", label, l)
	}
}

// wrap breaks s into lines of at most n runes at spaces; a longer word (a URL) stays whole.
func wrap(s string, n int) []string {
	var lines []string
	var cur []string
	size := 0
	for _, word := range strings.Fields(s) {
		l := len([]rune(word))
		if size > 0 && size+1+l > n {
			lines = append(lines, strings.Join(cur, " "))
			cur, size = nil, 0
		}
		if size > 0 {
			size++
		}
		cur = append(cur, word)
		size += l
	}
	if len(cur) > 0 || len(lines) == 0 {
		lines = append(lines, strings.Join(cur, " "))
	}
	return lines
}
