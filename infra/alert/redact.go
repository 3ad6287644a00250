package alert

import (
	"errors"
	"net/url"
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
