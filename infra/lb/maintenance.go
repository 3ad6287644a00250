package lb

import (
	"bytes"
	"encoding/json"
	"html/template"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/zero502/zero502/infra/adminapi"
	"github.com/zero502/zero502/infra/http1"
)

// maintenance is the LB's maintenance switch (zero502 maintenance on|off, PUT and DELETE
// /admin/maintenance): while on, every request on the proxy listener but the LB's own health
// gets 503 with Retry-After and a page, HTML or JSON as the client accepts, and no backend is
// asked; the health checks, the admin API and deploys go on. The page is rendered once, when
// the switch is set: the hot path pays one atomic load.
type maintenance struct {
	page     atomic.Pointer[maintenancePage] // nil: off
	answered atomic.Uint64
}

// maintenancePage is one setting of the switch, rendered.
type maintenancePage struct {
	set        adminapi.Maintenance
	html, json []byte
	retryAfter string // seconds
}

var maintenanceTmpl = template.Must(template.New("maintenance").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Down for maintenance</title>
<style>body{font-family:system-ui,sans-serif;margin:4em auto;max-width:36em;padding:0 1em;color:#222}</style></head>
<body><h1>Down for maintenance</h1>
{{if .Message}}<p style="white-space:pre-line">{{.Message}}</p>{{else}}<p>We will be back shortly.</p>{{end}}
<p><small>Please try again in {{.Retry}}.</small></p></body></html>
`))

func newMaintenancePage(c adminapi.MaintenanceChange, since time.Time) *maintenancePage {
	p := &maintenancePage{set: adminapi.Maintenance{On: true, Message: c.Message, Since: since, RetryAfter: c.RetryAfter}}
	retry := time.Duration(c.RetryAfter)
	p.retryAfter = strconv.Itoa(int(retry / time.Second))
	var html bytes.Buffer
	_ = maintenanceTmpl.Execute(&html, map[string]any{"Message": c.Message, "Retry": retry.String()})
	p.html = html.Bytes()
	js, _ := json.Marshal(map[string]any{ // strings and a number: never fails
		"error": "maintenance", "message": c.Message, "retry_after_seconds": int(retry / time.Second),
	})
	p.json = append(js, '\n')
	return p
}

// Maintenance is the switch's state (adminapi.MaintenanceSwitch).
func (s *Server) Maintenance() adminapi.Maintenance {
	m := adminapi.Maintenance{Answered: s.maint.answered.Load()}
	if p := s.maint.page.Load(); p != nil {
		m.On, m.Message, m.Since, m.RetryAfter = true, p.set.Message, p.set.Since, p.set.RetryAfter
	}
	return m
}

// SetMaintenance turns maintenance on with c (checked by the caller: adminapi.MaintenanceChange
// Check) or off with nil. Setting it again changes the message and keeps its start.
func (s *Server) SetMaintenance(c *adminapi.MaintenanceChange) adminapi.Maintenance {
	if c == nil {
		if s.maint.page.Swap(nil) != nil {
			s.log.Info("maintenance off: requests go to the backends again")
			s.metrics.admin(actionMaintenanceOff)
		}
		return s.Maintenance()
	}
	since := s.clock.Now().UTC()
	if old := s.maint.page.Load(); old != nil {
		since = old.set.Since
	}
	s.maint.page.Store(newMaintenancePage(*c, since))
	s.log.Info("maintenance on: every request gets 503 and the maintenance page", "message", c.Message,
		"retry_after", time.Duration(c.RetryAfter).String())
	s.metrics.admin(actionMaintenanceOn)
	return s.Maintenance()
}

// maintenanceFor is the page req gets instead of a backend's answer, or nil: maintenance is off,
// or req asks for the LB's own health (which a front balancer must still see healthy, so users
// keep reaching the page).
func (s *Server) maintenanceFor(req *http1.Request) *maintenancePage {
	p := s.maint.page.Load()
	if p == nil || s.isOwnHealth(req) {
		return nil
	}
	return p
}

// appendAnswer appends p's 503 answer to req to dst: JSON when the client's Accept
// names application/json, HTML otherwise.
func (p *maintenancePage) appendAnswer(dst []byte, req *http1.Request, closeClient bool) []byte {
	body, ctype := p.html, "text/html; charset=utf-8"
	if accept, ok := req.Get("Accept"); ok && bytes.Contains(accept, []byte("application/json")) {
		body, ctype = p.json, "application/json"
	}
	dst = append(dst, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: "...)
	dst = append(dst, ctype...)
	dst = append(dst, "\r\nContent-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\nRetry-After: "...)
	dst = append(dst, p.retryAfter...)
	dst = append(dst, "\r\nCache-Control: no-store\r\n"...)
	if closeClient {
		dst = append(dst, "Connection: close\r\n"...)
	}
	dst = append(dst, "\r\n"...)
	if !req.IsHead() {
		dst = append(dst, body...)
	}
	return dst
}
