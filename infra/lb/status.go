package lb

import (
	"html/template"
	"net/http"
	"time"
)

var statusTmpl = template.Must(template.New("status").Parse(`<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="2">
<title>zero502 lb</title>
<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}
td,th{padding:.3em .8em;border-bottom:1px solid #ddd;text-align:left}
.healthy{color:#186a3b}.draining{color:#9a7d0a}.unhealthy{color:#922b21}.joining{color:#555}</style></head>
<body><h1>zero502 lb {{if .Draining}}(draining){{end}}</h1>
{{if .Maintenance.On}}<p class="maintenance" style="background:#fdebd0;padding:.5em"><b>MAINTENANCE</b> since
{{.Maintenance.Since.Format "15:04:05"}}: every request gets 503 (Retry-After {{.Maintenance.RetryAfter}}){{if .Maintenance.Message}}: {{.Maintenance.Message}}{{end}}
· {{.Maintenance.Answered}} answered · off: zero502 maintenance off</p>{{end}}
<p>listen {{.Settings.Listen}} · health {{.Settings.HealthPath}} every {{.Settings.Interval}}
(timeout {{.Settings.Timeout}}, out after {{.Settings.UnhealthyThreshold}}, back after
{{.Settings.HealthyThreshold}}) · connect {{.Settings.ConnectTimeout}} · headers {{.Settings.HeaderTimeout}}</p>
<table><tr><th>backend</th><th>state</th><th>weight</th><th>since</th><th>fails</th><th>oks</th><th>in flight</th>
<th>2xx</th><th>3xx</th><th>4xx</th><th>5xx</th><th>errors</th><th>health 503</th><th>lb answers</th><th>p99 head</th>
<th>last error</th></tr>
{{range .Backends}}<tr><td>{{.Address}}</td><td class="{{.State}}">{{.State}}</td><td class="weight">{{.Weight}}</td>
<td>{{.Since.Format "15:04:05.000"}}</td><td>{{.ConsecutiveFailures}}</td><td>{{.ConsecutiveSuccesses}}</td>
<td>{{.InFlight}}</td><td>{{index .Requests "2xx"}}</td><td>{{index .Requests "3xx"}}</td>
<td>{{index .Requests "4xx"}}</td><td>{{index .Requests "5xx"}}</td><td>{{index .Requests "errors"}}</td>
<td>{{.Outcomes.HealthUnavailable}}</td><td>{{.Outcomes.LBAnswers.Total}}</td><td>{{.Outcomes.Latency.Quantile 0.99}}</td>
<td>{{.LastError}}</td></tr>{{end}}</table>
<h2>Recent transitions</h2><ul>
{{range .Backends}}{{$a := .Address}}{{range .Transitions}}<li>{{.At.Format "15:04:05.000"}} {{$a}}: {{.From}} → {{.To}} ({{.Reason}})</li>{{end}}{{end}}
</ul><p>generated {{.Now}}</p></body></html>
`))

// statusPage is the human view of the admin data (GET / on the admin listener).
func (s *Server) statusPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	v := s.set.view()
	if s.ln != nil {
		v.Listen = s.Addr()
	}
	_ = statusTmpl.Execute(w, map[string]any{
		"Draining": s.draining.Load(), "Maintenance": s.Maintenance(), "Settings": v, "Backends": s.Statuses(),
		"Now": time.Now().UTC().Format(time.RFC3339),
	})
}
