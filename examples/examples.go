// Package examples embeds the shipped configs, so `zero502 demo` runs on local.yaml with nothing
// but the binary, and the invariant tests check every shipped config.
package examples

import "embed"

// Files holds every shipped example config (*.yaml).
//
//go:embed *.yaml
var Files embed.FS

// Local is examples/local.yaml: the in-house LB and three local hosts, the demo's config.
//
//go:embed local.yaml
var Local []byte
