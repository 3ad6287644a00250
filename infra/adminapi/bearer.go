package adminapi

import (
	"crypto/subtle"
	"net/http"
	"strings"
)

// RequireBearer is the token half of Access (guard.go): it lets a request
// through when its Authorization header carries token. The scheme is case-insensitive (RFC 7235
// §2.1: "bearer", "BEARER"); the token is compared in constant time. An empty token lets nothing
// through. realm names the server in WWW-Authenticate; setting names where the token is set, for
// the 401's message.
func RequireBearer(token, realm, setting string, next http.Handler) http.Handler {
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got, ok := bearerToken(r.Header.Get("Authorization"))
		if token == "" || !ok || subtle.ConstantTimeCompare([]byte(got), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="`+realm+`"`)
			http.Error(w, "admin API needs Authorization: Bearer <"+setting+">", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken is the token of an Authorization header of the Bearer scheme, in any case.
func bearerToken(h string) (string, bool) {
	const scheme = "bearer "
	if len(h) <= len(scheme) || !strings.EqualFold(h[:len(scheme)], scheme) {
		return "", false
	}
	return strings.TrimLeft(h[len(scheme):], " "), true
}
