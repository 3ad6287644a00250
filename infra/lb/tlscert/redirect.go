package tlscert

import (
	"net"
	"net/http"
	"strings"
)

// Redirect answers every request 308 Permanent Redirect to the same host, path and query over
// HTTPS on httpsPort (omitted when 443), so a method and its body are kept.
func Redirect(httpsPort string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		} else if len(host) > 1 && host[0] == '[' && host[len(host)-1] == ']' {
			host = host[1 : len(host)-1] // an IPv6 literal without a port
		}
		if host == "" {
			http.Error(w, "a Host header is required", http.StatusBadRequest)
			return
		}
		// JoinHostPort puts an IPv6 literal in brackets, which the URL needs with or without
		// the port
		host = net.JoinHostPort(host, httpsPort)
		if httpsPort == "443" {
			host = strings.TrimSuffix(host, ":443")
		}
		w.Header().Set("Connection", "close")
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
}
