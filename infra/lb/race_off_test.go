//go:build !race

package lb

// raceEnabled: the race detector slows every byte the tests move several times over.
const raceEnabled = false
