// Command frontendjson writes a table the frontend reads from the Go code that owns it:
// "semconv" is pkg/semconv's metric catalog (src/semconv.json, for the query builder),
// "defaults" is pkg/models' setting defaults (src/defaults.json, for the config editor),
// "starters" is pkg/starters' starter queries (src/starters.json, for the query editor).
// go generate in each package writes its file; a test there fails when the file is stale.
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/inferscope/sagemaker-datasource/pkg/models"
	"github.com/inferscope/sagemaker-datasource/pkg/semconv"
	"github.com/inferscope/sagemaker-datasource/pkg/starters"
)

var tables = map[string]func() ([]byte, error){
	"semconv":  semconv.CatalogJSON,
	"defaults": models.DefaultsJSON,
	"starters": starters.JSON,
}

func main() {
	out := flag.String("o", "", "file to write (default: stdout)")
	flag.Parse()
	if err := run(*out, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "frontendjson:", err)
		os.Exit(1)
	}
}

func run(out string, args []string) error {
	names := make([]string, 0, len(tables))
	for name := range tables {
		names = append(names, name)
	}
	slices.Sort(names)
	if len(args) != 1 || tables[args[0]] == nil {
		return fmt.Errorf("name one table: %s", strings.Join(names, ", "))
	}
	b, err := tables[args[0]]()
	if err != nil {
		return err
	}
	if out == "" {
		_, err = os.Stdout.Write(b)
		return err
	}
	return os.WriteFile(out, b, 0o644)
}
