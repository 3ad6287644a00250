package main

import (
	"embed"
	"io/fs"
)

// daemonUnits are the systemd units of the long-running daemons (lb, edge, mesh), shipped in
// the binary so `zero502 host install` puts them on a server. The watchdog's units are in
// watchdog/systemd.
//
//go:embed units/*.service
var daemonUnits embed.FS

// shippedUnits are daemonUnits at the root, as deployer.Install takes them.
func shippedUnits() fs.FS {
	units, err := fs.Sub(daemonUnits, "units")
	if err != nil {
		panic(err) // "units" is a valid path: fs.Sub cannot fail on it
	}
	return units
}
