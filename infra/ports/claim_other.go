//go:build !unix

package ports

import "os"

// alive cannot tell here; a claim is then honoured until claimTTL.
func alive(int) bool { return true }

// ownedByMe cannot tell owners here (Windows): claims stay this process's own.
func ownedByMe(os.FileInfo) bool { return false }

// exclusively runs f (no claim files here: nothing to take over across processes).
func exclusively(_ string, f func()) { f() }
