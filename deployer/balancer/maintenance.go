package balancer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/zero502/zero502/infra/adminapi"
)

// ErrNoMaintenance marks a balancer that has no maintenance switch (kinds alb, edges, dns, none).
var ErrNoMaintenance = errors.New("this balancer has no maintenance switch")

// Maintenance reads the LB's maintenance switch (GET /admin/maintenance).
func (b *InHouse) Maintenance(ctx context.Context) (adminapi.Maintenance, error) {
	var m adminapi.Maintenance
	if b.kind == "edge" {
		return m, fmt.Errorf("edge %s: %w", b.admin, ErrNoMaintenance)
	}
	return m, b.get(ctx, adminapi.MaintenancePath, &m)
}

// SetMaintenance turns the LB's maintenance on with c (PUT) or off when c is nil (DELETE).
func (b *InHouse) SetMaintenance(ctx context.Context, c *adminapi.MaintenanceChange) (adminapi.Maintenance, error) {
	var m adminapi.Maintenance
	if b.kind == "edge" {
		return m, fmt.Errorf("edge %s: %w", b.admin, ErrNoMaintenance)
	}
	method, path := http.MethodDelete, adminapi.MaintenancePath
	var body io.Reader
	if c != nil {
		method, body = http.MethodPut, c.Body()
	}
	code, data, err := b.do(ctx, method, path, body)
	if err != nil {
		return m, err
	}
	if code == http.StatusNotFound || code == http.StatusMethodNotAllowed {
		return m, fmt.Errorf("%s admin %s %s%s: %d: this LB has no maintenance switch; upgrade it to this zero502", b.kind, method, b.admin, path, code)
	}
	if code != http.StatusOK {
		return m, fmt.Errorf("%s admin %s %s%s: %d %s: %.300s", b.kind, method, b.admin, path, code, http.StatusText(code), strings.TrimSpace(string(data)))
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, fmt.Errorf("%s admin %s%s: not the admin API's JSON: %w", b.kind, b.admin, path, err)
	}
	return m, nil
}
