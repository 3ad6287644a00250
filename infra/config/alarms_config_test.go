package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

func TestRolloutAlarmsDefaultToNone(t *testing.T) {
	c, err := Load(writeConfig(t, webService))
	if err != nil {
		t.Fatal(err)
	}
	if c.Rollout.Alarms == nil || len(c.Rollout.Alarms) != 0 {
		t.Fatalf("rollout.alarms = %#v, want the defaults' empty list", c.Rollout.Alarms)
	}
}

func TestRolloutAlarmsLoadAsWritten(t *testing.T) {
	long := strings.Repeat("ü", MaxAlarmName) // 255 characters, 510 bytes: AWS counts characters
	c, err := Load(writeConfig(t, webService+
		"rollout:\n  alarms: [web-5xx, \"p99 > 1s\", \"Composite/Web health\", "+long+"]\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"web-5xx", "p99 > 1s", "Composite/Web health", long}
	if !slices.Equal(c.Rollout.Alarms, want) {
		t.Fatalf("rollout.alarms = %q, want %q", c.Rollout.Alarms, want)
	}
}

func TestBadRolloutAlarmsAreRefusedNamingKeyValueAndRule(t *testing.T) {
	for _, tc := range []struct {
		name, alarms string
		key          string
		want         []string
	}{
		{"empty name", `[web-5xx, ""]`, "rollout.alarms[1]", []string{`""`, "empty name"}},
		{"blank name", `["  "]`, "rollout.alarms[0]", []string{`"  "`, "empty name"}},
		{"duplicate", `[web-5xx, p99, web-5xx]`, "rollout.alarms[2]", []string{`"web-5xx"`, "already rollout.alarms[0]", "once"}},
		{"too long", "[" + strings.Repeat("a", MaxAlarmName+1) + "]", "rollout.alarms[0]", []string{"256 characters", "at most 255"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Load(writeConfig(t, webService+"rollout:\n  alarms: "+tc.alarms+"\n"))
			if err == nil {
				t.Fatalf("rollout.alarms %s accepted", tc.alarms)
			}
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Key != tc.key {
				t.Fatalf("error %q is not a FieldError of %s", err, tc.key)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
}
