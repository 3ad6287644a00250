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

// redactErr replaces the URL net/http puts in its errors (*url.Error) with its redacted form.
func redactErr(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		ue.URL = Redact(ue.URL)
	}
	return err
}
