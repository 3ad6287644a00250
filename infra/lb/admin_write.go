package lb

import (
	"errors"
	"net/http"
)

// The admin write API (README: Admin API). Every change applies at once, without a restart and
// without dropping a request, on both paths; GET never changes anything.
//
//	PUT    /admin/backends/{addr}        add (201, joining) or undrain (200); known: no-op (200)
//	POST   /admin/backends/{addr}/drain  admin drain (200): out of rotation until undrained
//	DELETE /admin/backends/{addr}        remove (204); in rotation: 409; unknown: 404
//
// Answers carry the backend's BackendStatus JSON, errors a plain-text message.
func (s *Server) adminWrites(mux *http.ServeMux) {
	mux.HandleFunc("PUT /admin/backends/{addr}", func(w http.ResponseWriter, r *http.Request) {
		st, created, err := s.AddBackend(r.PathValue("addr"))
		if err != nil {
			adminError(w, err)
			return
		}
		code := http.StatusOK
		if created {
			code = http.StatusCreated
		}
		writeJSONStatus(w, code, st)
	})
	mux.HandleFunc("POST /admin/backends/{addr}/drain", func(w http.ResponseWriter, r *http.Request) {
		st, err := s.DrainBackend(r.PathValue("addr"))
		if err != nil {
			adminError(w, err)
			return
		}
		writeJSONStatus(w, http.StatusOK, st)
	})
	mux.HandleFunc("DELETE /admin/backends/{addr}", func(w http.ResponseWriter, r *http.Request) {
		if err := s.RemoveBackend(r.PathValue("addr")); err != nil {
			adminError(w, err)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
}

// adminError answers a refused change: 404 unknown backend, 409 still in rotation, 400 for a
// bad address.
func adminError(w http.ResponseWriter, err error) {
	code := http.StatusBadRequest
	switch {
	case errors.Is(err, ErrUnknownBackend):
		code = http.StatusNotFound
	case errors.Is(err, ErrInRotation):
		code = http.StatusConflict
	}
	http.Error(w, err.Error(), code)
}
