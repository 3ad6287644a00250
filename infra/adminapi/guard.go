package adminapi

import (
	"mime"
	"net"
	"net/http"
	"strings"
)

// ClientHeader marks a request as sent by a program, not a browser: a browser cannot send a
// custom header across origins without a CORS preflight, which the admin listeners never
// answer. Every zero502 client of an admin API sends it; with curl, add -H 'X-Zero502-Admin: 1'.
const ClientHeader = "X-Zero502-Admin"

// Access is who may use an admin listener (the LB's and the edge's), the one rule both enforce:
//
//   - With a Token, every request needs Authorization: Bearer <Token>, on every address,
//     except GET of the Open paths (health probes and metrics scrapers).
//   - With no Token, the listener must be on loopback (else nothing passes), every request must
//     name a loopback host in its Host header (a page on evil.example rebinding its name to
//     127.0.0.1 sends Host: evil.example), and a write (any method but GET and HEAD) must be a
//     request no browser sends on its own: Content-Type application/json or the ClientHeader.
type Access struct {
	Token string
	// Listen is the address the listener is bound to.
	Listen string
	// Realm names the server in WWW-Authenticate; Setting where the token is set, for the 401.
	Realm, Setting string
	// Open are the paths any caller may GET even when a token is set.
	Open []string
}

// Guard wraps next in the Access rule.
func (a Access) Guard(next http.Handler) http.Handler {
	if a.Token != "" {
		bearer := RequireBearer(a.Token, a.Realm, a.Setting, next)
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if (r.Method == http.MethodGet || r.Method == http.MethodHead) && a.open(r.URL.Path) {
				next.ServeHTTP(w, r)
				return
			}
			bearer.ServeHTTP(w, r)
		})
	}
	if !Loopback(a.Listen) {
		return RequireBearer("", a.Realm, a.Setting, next) // lets nothing through
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !loopbackHost(r.Host) {
			http.Error(w, "Host "+quote(r.Host)+" does not name this admin listener on loopback: refused "+
				"(a page whose name resolves to 127.0.0.1 must not read or drive it); "+
				"ask http://"+a.Listen+"/ or set "+a.Setting, http.StatusForbidden)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead && !programmatic(r) {
			http.Error(w, r.Method+" "+r.URL.Path+": a write needs Content-Type: application/json or the header "+
				ClientHeader+": 1 (no browser sends either across origins), e.g. curl -H '"+ClientHeader+": 1'",
				http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

func (a Access) open(path string) bool {
	for _, p := range a.Open {
		if path == p {
			return true
		}
	}
	return false
}

// programmatic reports whether r carries what a browser cannot send without a preflight.
func programmatic(r *http.Request) bool {
	if r.Header.Get(ClientHeader) != "" {
		return true
	}
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// Loopback reports whether addr (host:port) is on loopback: localhost or a loopback IP.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	return loopbackName(host)
}

// loopbackHost reports whether a Host header names loopback, with or without a port.
func loopbackHost(h string) bool {
	if host, _, err := net.SplitHostPort(h); err == nil {
		return loopbackName(host)
	}
	return loopbackName(strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"))
}

func loopbackName(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func quote(s string) string {
	if len(s) > 100 {
		s = s[:100] + "…"
	}
	return `"` + strings.ReplaceAll(s, `"`, `\"`) + `"`
}
