package docker

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/moby/moby/api/types/jsonstream"
)

// readStream reads one of the engine's JSON progress streams (build, pull, push) to its end. It
// writes build output and status lines to progress (a line per layer and status change, and
// per tenth of a layer's transfer; the byte counts of progress bars are left out), hands every
// aux object to aux (nil: ignored) and returns the first error the engine reported inside the stream: the engine answers 200 and
// reports a failed pull or push in the stream, not as an HTTP error.
func readStream(body io.Reader, progress io.Writer, aux func(json.RawMessage)) error {
	dec := json.NewDecoder(body)
	var failed error
	last := map[string]string{} // layer id → the last status printed for it
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err == io.EOF {
			return failed
		} else if err != nil {
			if failed != nil {
				return failed
			}
			return fmt.Errorf("reading the engine's progress stream: %w", err)
		}
		if m.Error != nil && m.Error.Message != "" && failed == nil {
			failed = errors.New(m.Error.Message)
		}
		if m.Stream != "" {
			io.WriteString(progress, m.Stream)
		}
		status := m.Status
		if p := m.Progress; status != "" && p != nil && p.Total > 0 && p.Current >= 0 && p.Current <= p.Total {
			// a layer's transfer, said at every tenth: a long download is seen going on
			status += fmt.Sprintf(" %d%%", p.Current*10/p.Total*10)
		}
		if status != "" && last[m.ID] != status {
			last[m.ID] = status
			if m.ID != "" {
				fmt.Fprintf(progress, "%s: %s\n", m.ID, status)
			} else {
				fmt.Fprintln(progress, strings.TrimRight(status, "\n"))
			}
		}
		if m.Aux != nil && aux != nil {
			aux(*m.Aux)
		}
	}
}
