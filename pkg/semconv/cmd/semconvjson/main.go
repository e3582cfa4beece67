// Command semconvjson writes the metric catalog of pkg/semconv as JSON for the frontend's query
// builder (go generate ./pkg/semconv writes src/semconv.json; a test there fails when it is stale).
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
)

func main() {
	out := flag.String("o", "", "file to write (default: stdout)")
	flag.Parse()
	b, err := semconv.CatalogJSON()
	if err == nil {
		if *out == "" {
			_, err = os.Stdout.Write(b)
		} else {
			err = os.WriteFile(*out, b, 0o644)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "semconvjson:", err)
		os.Exit(1)
	}
}
