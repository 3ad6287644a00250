package deployer

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/zero502/zero502/infra/secrets"
)

// ConfigEnd is the line that ends the config the deployer sends to `zero502 host … --config -`
// over ssh, encoded with config.Encode: the remote host needs no copy of the config file, and
// sees the deployer's ZERO502_* overrides. A YAML comment, so the config stays valid YAML; after
// it, stdin stays open for as long as the deployer is connected, and its end (EOF) tells the
// host its deployer is gone.
const ConfigEnd = "# zero502: end of config"

// SecretsStart is the line after which, up to ConfigEnd, the deployer sends the values of the
// services' secrets as dotenv text: over ssh's stdin, never in the config, a file or argv. Only
// the host commands that publish a spec (step, stop) get them.
const SecretsStart = "# zero502: secrets"

// configStream is what the deployer writes to a host command's stdin: the config, the secrets'
// values when it sends any, ConfigEnd.
func configStream(cfgYAML []byte, vals map[string]secrets.Value) []byte {
	out := append(bytes.Clone(cfgYAML), '\n')
	if len(vals) > 0 {
		out = append(append(out, SecretsStart+"\n"...), secrets.FormatDotenv(vals)...)
	}
	return append(out, ConfigEnd+"\n"...)
}

// secretsFor are the secrets' values a host command with args gets: all of them for a command
// that publishes a spec, none for the others.
func (d *Deployer) secretsFor(args []string) map[string]secrets.Value {
	if len(args) > 1 && args[0] == "host" && (args[1] == "step" || args[1] == "stop") {
		return d.cfg.SecretValues
	}
	return nil
}

// ReadConfigStream reads a config from r up to the ConfigEnd line (framed: the sender stays
// connected, r's end will mean it is gone) or to r's end (a file piped in by hand), and the
// secrets' values sent between SecretsStart and ConfigEnd.
func ReadConfigStream(r *bufio.Reader) (data []byte, vals map[string]secrets.Value, framed bool, err error) {
	var buf, sec bytes.Buffer
	into := &buf
	for {
		line, err := r.ReadString('\n')
		switch string(bytes.TrimRight([]byte(line), "\r\n")) {
		case ConfigEnd:
			if into == &sec {
				if vals, err = secrets.ParseDotenv(sec.Bytes(), "the secrets sent on stdin"); err != nil {
					return nil, nil, false, err
				}
			}
			return buf.Bytes(), vals, true, nil
		case SecretsStart:
			into = &sec
			continue
		}
		into.WriteString(line)
		if errors.Is(err, io.EOF) {
			if into == &sec {
				return nil, nil, false, errors.New("read the config from stdin: the secrets sent after it end before " + ConfigEnd)
			}
			return buf.Bytes(), nil, false, nil
		}
		if err != nil {
			return nil, nil, false, fmt.Errorf("read the config from stdin: %w", err)
		}
	}
}
