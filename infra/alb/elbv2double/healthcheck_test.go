package elbv2double_test

import (
	"encoding/xml"
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestModifyTargetGroupSetsTheHealthCheckPortAndProtocol(t *testing.T) {
	d, srv, arn := start(t)
	modify := func(kv ...string) (int, string) {
		form := url.Values{"Action": {"ModifyTargetGroup"}, "Version": {"2015-12-01"}, "TargetGroupArn": {arn}}
		for i := 0; i < len(kv); i += 2 {
			form.Set(kv[i], kv[i+1])
		}
		return post(t, srv, form, true)
	}
	if s, _ := d.Settings(arn); s.HealthCheckPort != "traffic-port" || s.HealthCheckProtocol != "HTTP" {
		t.Fatalf("a new group checks port %q over %q, want traffic-port over HTTP", s.HealthCheckPort, s.HealthCheckProtocol)
	}
	for _, tc := range []struct{ key, value, code string }{
		{"HealthCheckPort", "0", "ValidationError"},
		{"HealthCheckPort", "web", "ValidationError"},
		{"HealthCheckProtocol", "TCP", "InvalidConfigurationRequest"},
	} {
		status, body := modify(tc.key, tc.value)
		var e errorDoc
		if err := xml.Unmarshal([]byte(body), &e); err != nil || status != http.StatusBadRequest || e.Code != tc.code {
			t.Errorf("%s %s: %d %+v, want 400 %s", tc.key, tc.value, status, e, tc.code)
		}
	}
	status, body := modify("HealthCheckPort", "8000", "HealthCheckProtocol", "HTTPS")
	if status != http.StatusOK || !strings.Contains(body, "<HealthCheckPort>8000</HealthCheckPort>") ||
		!strings.Contains(body, "<HealthCheckProtocol>HTTPS</HealthCheckProtocol>") {
		t.Fatalf("ModifyTargetGroup to port 8000 over HTTPS: %d\n%s", status, body)
	}
	if s, _ := d.Settings(arn); s.HealthCheckPort != "8000" || s.HealthCheckProtocol != "HTTPS" {
		t.Fatalf("after ModifyTargetGroup the group checks port %q over %q", s.HealthCheckPort, s.HealthCheckProtocol)
	}
}

func TestARequestSignedForAnotherRegionFindsNoTargetGroup(t *testing.T) {
	_, srv, arn := start(t)
	form := url.Values{"Action": {"DescribeTargetGroupAttributes"}, "Version": {"2015-12-01"}, "TargetGroupArn": {arn}}
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/", strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Authorization", strings.Replace(auth, "/eu-west-1/", "/us-east-1/", 1))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e errorDoc
	if err := xml.NewDecoder(resp.Body).Decode(&e); err != nil || resp.StatusCode != http.StatusBadRequest || e.Code != "TargetGroupNotFound" {
		t.Fatalf("a eu-west-1 group asked for in us-east-1: %d %+v (%v), want 400 TargetGroupNotFound", resp.StatusCode, e, err)
	}
}
