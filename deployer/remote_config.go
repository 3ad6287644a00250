package deployer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
)

// ConfigEnd is the line that ends the config the deployer sends to `zero502 host … --config -`
// over ssh, encoded with infra.Encode: the remote host needs no copy of the config file, and
// sees the deployer's ZERO502_* overrides. A YAML comment, so the config stays valid YAML; after
// it, stdin stays open for as long as the deployer is connected, and its end (EOF) tells the
// host its deployer is gone.
const ConfigEnd = "# zero502: end of config"

// ReadConfigStream reads a config from r up to the ConfigEnd line (framed: the sender stays
// connected, r's end will mean it is gone) or to r's end (a file piped in by hand).
func ReadConfigStream(r *bufio.Reader) (data []byte, framed bool, err error) {
	var buf bytes.Buffer
	for {
		line, err := r.ReadString('\n')
		if bytes.Equal(bytes.TrimRight([]byte(line), "\r\n"), []byte(ConfigEnd)) {
			return buf.Bytes(), true, nil
		}
		buf.WriteString(line)
		if errors.Is(err, io.EOF) {
			return buf.Bytes(), false, nil
		}
		if err != nil {
			return nil, false, fmt.Errorf("read the config from stdin: %w", err)
		}
	}
}
