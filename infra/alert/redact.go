package alert

import (
	"cmp"
	"errors"
	"net/url"
	"slices"
	"strings"
)

// Redact is a webhook URL as logs and errors show it: scheme://host/… — the path and query of
// a webhook (Slack's, a chat bot's) are often its secret, so they never leave the Sender.
func Redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return "(webhook URL redacted)"
	}
	return u.Scheme + "://" + u.Host + "/…"
}

// RedactErr replaces the URL net/http and net/url put in their errors (*url.Error) with its
// redacted form (see Redact), in place, and returns err: an error about a webhook URL, from a
// POST or from parsing it, never shows its path, query or userinfo.
func RedactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = Redact(ue.URL)
	}
	return err
}

// RedactAnswer is text a webhook's receiver answered, as logs and errors show it: whatever of
// the URL's path, query and userinfo it quotes (an error page's "Cannot POST /services/…", a
// proxy's "could not reach http://…"), whole or a long part of it (a path segment or a query
// value of 8 bytes or more), is replaced by "…", as Redact hides them.
func RedactAnswer(raw, text string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(the answer is withheld: the webhook URL does not parse)"
	}
	secrets := []string{u.RequestURI(), u.EscapedPath(), u.Path, u.RawQuery, u.User.String()}
	if q, err := url.QueryUnescape(u.RawQuery); err == nil {
		secrets = append(secrets, q)
	}
	if p, ok := u.User.Password(); ok {
		secrets = append(secrets, p)
	}
	parts := strings.FieldsFunc(u.EscapedPath()+"&"+u.Path+"&"+u.RawQuery, func(r rune) bool { return strings.ContainsRune("/&=", r) })
	for _, vs := range u.Query() {
		parts = append(parts, vs...)
	}
	for _, part := range parts {
		if len(part) >= 8 {
			secrets = append(secrets, part)
		}
	}
	slices.SortFunc(secrets, func(a, b string) int { return cmp.Compare(len(b), len(a)) }) // the longest first
	for _, s := range secrets {
		if len(s) > 1 {
			text = strings.ReplaceAll(text, s, "…")
		}
	}
	return text
}
