// Package syncbuffer is the tests' one buffer that others write while the test reads it: a child
// process's stdout and stderr, a logger's lines, an access log, a copy that follows a file. Its
// writes and reads take one lock, so the race detector stays quiet and a read sees whole writes.
package syncbuffer

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent writers and readers. The zero value is an empty
// buffer ready for use; a Buffer must not be copied after first use.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p whole: a String that runs at the same time sees all of it or none.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}
