// Command cmd writes docs/config.md, the config reference, from package config's source (package
// configdoc). Package config's //go:generate line runs it: `go generate ./infra/config`.
//
//	go run ./internal/configdoc/cmd -dir infra/config -out docs/config.md
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/zero502/zero502/internal/configdoc"
)

func main() {
	dir := flag.String("dir", "infra/config", "package config's directory (its .go files and defaults.yaml)")
	out := flag.String("out", "docs/config.md", "the file to write")
	flag.Parse()
	doc, err := configdoc.Generate(*dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*out, doc, 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
