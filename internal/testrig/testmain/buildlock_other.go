//go:build !unix

package testmain

// LockBuild does not serialize builds where flock(2) is missing.
func LockBuild() (unlock func()) { return func() {} }
