package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/zero502/zero502/infra/trust"
)

// ServicesFromFile reads the services of the Compose file at path, for services_from, and says
// what of the file zero502 does not honour as Compose would, key by key. Package infra/compose
// sets it (the zero502 binary links it); without it services_from is refused.
var ServicesFromFile func(path string) (svcs []Service, notes []string, err error)

// readServicesFrom replaces the services with those of services_from, read relative to the
// config file name, and clears services_from: what was read is the config from now on. As root
// it reads only a file that passes the trust rule, as the config itself.
func (c *Config) readServicesFrom(name string) error {
	if c.ServicesFrom == "" {
		return nil
	}
	if len(c.Services) > 0 {
		return &FieldError{Key: "services_from", Value: c.ServicesFrom,
			Rule: "is set beside services: give the services in one place (services_from reads all of them from a Compose file)"}
	}
	if ServicesFromFile == nil {
		return &FieldError{Key: "services_from", Value: c.ServicesFrom,
			Rule: "needs the Compose reader (package infra/compose), which this program does not include"}
	}
	path := c.ServicesFrom
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(name), path)
	}
	// As root, the Compose file is held to the config's own rule (readFile): it names the images,
	// commands, users and environment a deploy runs.
	if os.Geteuid() == 0 {
		if err := trust.Check(path, 0); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("services_from %s: %w: root reads only a Compose file that is root's alone (it names the images, "+
				"commands and users a deploy runs): make it and every directory above it root's, writable by no one else", c.ServicesFrom, err)
		}
	}
	svcs, notes, err := ServicesFromFile(path)
	if err != nil {
		return fmt.Errorf("services_from %s: %w", c.ServicesFrom, err)
	}
	c.Services, c.ServicesFrom, c.ComposeNotes = svcs, "", notes
	return nil
}
