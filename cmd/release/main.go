// Command release checks a built plugin directory and packages it for installation.
//
//	release check   [--dist dist] [--all]   rules a first install depends on; --all for releases
//	release package [--dist dist] [--out build]
package main

import (
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/inferscope/sagemaker-datasource/pkg/release"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "check" && args[0] != "package") {
		fmt.Fprintln(stderr, "usage: release check [--dist dir] [--all] | release package [--dist dir] [--out dir]")
		return 2
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	dist := fs.String("dist", "dist", "built plugin directory")
	all := fs.Bool("all", false, "require backend binaries for every platform (a release)")
	out := fs.String("out", "build", "where package writes the zip and its checksums")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if args[0] == "package" {
		*all = true
	}
	probs := release.Check(os.DirFS(*dist), release.Options{AllPlatforms: *all})
	for _, p := range probs {
		fmt.Fprintln(stderr, p)
	}
	if len(probs) > 0 {
		fmt.Fprintf(stderr, "%d problem(s) in %s\n", len(probs), *dist)
		return 1
	}
	if args[0] == "check" {
		fmt.Fprintf(stdout, "%s: plugin build looks installable\n", *dist)
		return 0
	}
	a, err := release.Package(*dist, *out)
	if err != nil {
		fmt.Fprintln(stderr, "package:", err)
		return 1
	}
	fmt.Fprintf(stdout, "wrote %s\n      %s\n      %s\n", a.Zip, a.SHA256, a.MD5)
	return 0
}
