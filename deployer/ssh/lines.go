package ssh

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
)

// MaxLine bounds one line a host prints: an event or report is far smaller; a longer line
// is dropped whole (the line callback gets a note of its size instead).
const MaxLine = 1 << 20

// ReadLines hands each line of r to line, a line longer than max replaced by a short note.
func ReadLines(r io.Reader, max int, line func([]byte)) {
	br := bufio.NewReaderSize(r, 64*1024)
	var long []byte
	dropped := 0
	for {
		chunk, err := br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			if dropped == 0 && len(long)+len(chunk) <= max {
				long = append(long, chunk...)
				continue
			}
			dropped += len(long) + len(chunk)
			long = long[:0]
			continue
		case dropped > 0:
			line([]byte(fmt.Sprintf("(a line of %d bytes, over the %d-byte limit, dropped)", dropped+len(long)+len(chunk), max)))
			dropped, long = 0, long[:0]
		case len(chunk) > 0 || len(long) > 0:
			b := bytes.TrimRight(append(long, chunk...), "\r\n")
			if len(b) > max {
				line([]byte(fmt.Sprintf("(a line of %d bytes, over the %d-byte limit, dropped)", len(b), max)))
			} else {
				line(b)
			}
			long = long[:0]
		}
		if err != nil {
			return
		}
	}
}

// TailBuffer keeps the last 4 KiB written to it (ssh's stderr, for error messages).
type TailBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (t *TailBuffer) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf.Write(p)
	if t.buf.Len() > 4096 {
		b := t.buf.Bytes()[t.buf.Len()-4096:]
		t.buf = *bytes.NewBuffer(append([]byte(nil), b...))
	}
	return len(p), nil
}

func (t *TailBuffer) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.buf.String()
}
