package tlscert

import (
	"net"
	"net/http"
)

// Redirect answers every request 308 Permanent Redirect to the same host, path and query over
// HTTPS on httpsPort (omitted when 443), so a method and its body are kept.
func Redirect(httpsPort string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host := r.Host
		if h, _, err := net.SplitHostPort(host); err == nil {
			host = h
		}
		if host == "" {
			http.Error(w, "a Host header is required", http.StatusBadRequest)
			return
		}
		if httpsPort != "443" {
			host = net.JoinHostPort(host, httpsPort)
		}
		w.Header().Set("Connection", "close")
		http.Redirect(w, r, "https://"+host+r.URL.RequestURI(), http.StatusPermanentRedirect)
	})
}
