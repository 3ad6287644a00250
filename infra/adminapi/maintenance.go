package adminapi

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/zero502/zero502/infra/config"
)

// MaintenancePath is the admin API's maintenance switch (the LB's; an edge forwards bytes and
// has none):
//
//	GET    /admin/maintenance   its state (200, Maintenance)
//	PUT    /admin/maintenance   on, with a MaintenanceChange body (200, Maintenance)
//	DELETE /admin/maintenance   off (200, Maintenance)
const MaintenancePath = "/admin/maintenance"

// Maintenance is the state of the maintenance switch: while On, the LB answers every request
// on its proxy listener (but its own health) with 503, Retry-After and a page saying Message,
// and sends nothing to its backends; their health checks, the admin API and deploys go on.
type Maintenance struct {
	On      bool      `json:"on"`
	Message string    `json:"message,omitempty"`
	Since   time.Time `json:"since,omitzero"`
	// RetryAfter is the Retry-After the 503s carry (a Go duration, whole seconds).
	RetryAfter Duration `json:"retry_after,omitempty"`
	// Answered counts the requests answered with the maintenance page since the LB started.
	Answered uint64 `json:"answered"`
}

// MaintenanceChange is the body of PUT /admin/maintenance.
type MaintenanceChange struct {
	Message    string   `json:"message"`
	RetryAfter Duration `json:"retry_after"`
}

// Duration is a time.Duration as a Go duration string in JSON ("30s").
type Duration time.Duration

// String is d as "30s".
func (d Duration) String() string { return time.Duration(d).String() }

// MarshalJSON writes d as "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return fmt.Errorf("a duration is a string such as \"30s\": %w", err)
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// ErrBadMaintenance marks a maintenance change the LB refuses (400).
var ErrBadMaintenance = errors.New("bad maintenance change")

// The rules of a MaintenanceChange.
const (
	MaxMaintenanceMessage = 1000 // bytes
)

// Body is c as the JSON body of the write, for a client to send.
func (c MaintenanceChange) Body() io.Reader {
	b, _ := json.Marshal(c) // a string and a duration: never fails
	return bytes.NewReader(b)
}

// Check says what is wrong with c, naming the field, the value and the rule (ErrBadMaintenance).
func (c MaintenanceChange) Check() error {
	if rule := config.RetryAfterRule(time.Duration(c.RetryAfter)); rule != "" {
		return fmt.Errorf("maintenance retry_after %s: %s: %w", time.Duration(c.RetryAfter), rule, ErrBadMaintenance)
	}
	switch {
	case len(c.Message) > MaxMaintenanceMessage:
		return fmt.Errorf("maintenance message of %d bytes: at most %d: %w", len(c.Message), MaxMaintenanceMessage, ErrBadMaintenance)
	case !utf8.ValidString(c.Message):
		return fmt.Errorf("maintenance message %q: not UTF-8: %w", c.Message, ErrBadMaintenance)
	}
	for _, r := range c.Message {
		if unicode.IsControl(r) && r != '\n' {
			return fmt.Errorf("maintenance message %q: control character %U (only newlines): %w", c.Message, r, ErrBadMaintenance)
		}
	}
	return nil
}

// maxMaintenanceBody bounds the body of PUT /admin/maintenance.
const maxMaintenanceBody = 8 << 10

// decodeMaintenanceChange reads and checks a PUT /admin/maintenance body.
func decodeMaintenanceChange(body io.Reader) (MaintenanceChange, error) {
	var c MaintenanceChange
	dec := json.NewDecoder(io.LimitReader(body, maxMaintenanceBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return c, fmt.Errorf(`maintenance change: the body must be the JSON object {"message": "…", "retry_after": "30s"}: %v: %w`, err, ErrBadMaintenance)
	}
	return c, c.Check()
}

// maintenanceSwitch is what the maintenance API changes (the LB).
type maintenanceSwitch interface {
	Maintenance() Maintenance
	// SetMaintenance turns maintenance on with c (already checked), or off when c is nil.
	SetMaintenance(c *MaintenanceChange) Maintenance
}

// HandleMaintenance serves MaintenancePath on mux.
func HandleMaintenance(mux *http.ServeMux, m maintenanceSwitch) {
	mux.HandleFunc("GET "+MaintenancePath, func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, m.Maintenance())
	})
	mux.HandleFunc("PUT "+MaintenancePath, func(w http.ResponseWriter, r *http.Request) {
		c, err := decodeMaintenanceChange(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		WriteJSON(w, http.StatusOK, m.SetMaintenance(&c))
	})
	mux.HandleFunc("DELETE "+MaintenancePath, func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, http.StatusOK, m.SetMaintenance(nil))
	})
}
