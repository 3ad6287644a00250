package adminapi

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
)

// DrainedByAdmin is who a drain without ?by= is recorded as drained by.
const DrainedByAdmin = "admin"

var drainerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{0,31}$`)

// DrainedBy is who a drain request says it comes from: its ?by= (CheckDrainer), DrainedByAdmin
// when absent.
func DrainedBy(r *http.Request) (string, error) {
	by := r.URL.Query().Get("by")
	if by == "" {
		return DrainedByAdmin, nil
	}
	if err := CheckDrainer(by); err != nil {
		return "", err
	}
	return by, nil
}

// CheckDrainer accepts a name of who drains (a drain's ?by=, or one handed over with a drain):
// lower-case letters, digits and '-', at most 32.
func CheckDrainer(by string) error {
	if !drainerName.MatchString(by) {
		return fmt.Errorf("by %q: must be 1 to 32 lower-case letters, digits and '-', starting with a letter or digit "+
			"(who drains: an undrain by another leaves the drain to its owner to undo)", by)
	}
	return nil
}

// Errors of the admin write API, wrapped by a balancer's own (the LB's backends, the edge's
// upstreams): the HTTP layer maps them to 404 and 409.
var (
	// ErrUnknownTarget: no target has this address.
	ErrUnknownTarget = errors.New("no target with this address")
	// ErrInRotation: a target must be drained before it is removed.
	ErrInRotation = errors.New("still in rotation")
)

// Targets is what the write API changes: the LB's backends, the edge's upstreams.
type Targets interface {
	// Add adds addr, joining, or undrains it; created says it was not known.
	Add(addr string) (st BackendStatus, created bool, err error)
	// Drain holds addr drained for by (DrainedBy): out of rotation, in-flight work goes on.
	Drain(addr, by string) (BackendStatus, error)
	// Remove forgets addr; one still in rotation is refused (ErrInRotation).
	Remove(addr string) error
}

// HandleWrites serves the admin write API on collection (/admin/backends, /admin/upstreams).
// Every change applies at once, without a restart; GET never changes anything.
//
//	PUT    {collection}/{addr}        add (201, joining) or undrain (200); known: no-op (200)
//	POST   {collection}/{addr}/drain  admin drain (200): out of rotation until undrained;
//	                                  ?by=NAME records who drains (drained_by; default admin)
//	DELETE {collection}/{addr}        remove (204); in rotation: 409; unknown: 404
//
// Answers carry the target's BackendStatus JSON, errors a plain-text message.
func HandleWrites(mux *http.ServeMux, collection string, t Targets) {
	mux.HandleFunc("PUT "+collection+"/{addr}", func(w http.ResponseWriter, r *http.Request) {
		st, created, err := t.Add(r.PathValue("addr"))
		if err != nil {
			WriteError(w, err)
			return
		}
		code := http.StatusOK
		if created {
			code = http.StatusCreated
		}
		WriteJSON(w, code, st)
	})
	mux.HandleFunc("POST "+collection+"/{addr}/drain", func(w http.ResponseWriter, r *http.Request) {
		by, err := DrainedBy(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		st, err := t.Drain(r.PathValue("addr"), by)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, st)
	})
	mux.HandleFunc("DELETE "+collection+"/{addr}", func(w http.ResponseWriter, r *http.Request) {
		if err := t.Remove(r.PathValue("addr")); err != nil {
			WriteError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// WriteError answers a refused change: 404 unknown target, 409 still in rotation, 400 for a bad
// address.
func WriteError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	switch {
	case errors.Is(err, ErrUnknownTarget):
		code = http.StatusNotFound
	case errors.Is(err, ErrInRotation):
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}

// WriteJSON answers v as indented JSON with code.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
