// Package startgc holds the garbage collector back while the zero502 binary's packages
// initialise and in the process's first second, then gives it back its setting.
//
// Every zero502 process pays its packages' init before it does anything: the JSON Schema
// drafts compose-go's loader compiles, the AWS SDK's service schemas, regular expressions. That
// allocates about 5 MB, past the collector's first goal (4 MB at GOGC=100), so each start ran a
// collection over a heap that is all live. A deploy starts one process per host for its look
// and step, and the process runtime one per instance, so that cycle is paid hundreds of times
// on a fleet's cores. Imported first by package main (nothing here but runtime/debug), its init
// raises GOGC before the heavy packages run theirs. Restore, main's first call, puts back what
// the environment asked for (GOGC, else 100) a second later: put back at once, it would start
// the very collection the raise avoided, since the init heap is already past the goal. A
// command that ends within that second (a look, a step's start, `zero502 version`) never
// collects; a long-running process (the LB, the agent) collects exactly as before from then on.
package startgc

import (
	"runtime/debug"
	"time"
)

// initPercent is the GOGC the binary's package initialisation runs under: high enough that the
// init heap never reaches the first goal (4 MB × initPercent/100).
const initPercent = 400

// asked is the GOGC the process was started with (debug.SetGCPercent's previous value: the
// GOGC environment variable's, 100 when unset, negative for off).
var asked = debug.SetGCPercent(initPercent)

// restoreAfter is how long after main begins the collector runs at initPercent still.
const restoreAfter = time.Second

// Restore gives the collector back the GOGC the process was started with, restoreAfter from
// now. main calls it first.
func Restore() { restoreIn(restoreAfter) }

func restoreIn(d time.Duration) { time.AfterFunc(d, func() { debug.SetGCPercent(asked) }) }
