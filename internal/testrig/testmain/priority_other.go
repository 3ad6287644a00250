//go:build !linux

package testmain

// favour is a no-op off Linux (see priority_linux.go).
func favour() {}
