package adminapi

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeWeightChangeTakesAnIntegerFrom1To1000(t *testing.T) {
	for body, want := range map[string]int{`{"weight": 1}`: 1, `{"weight":1000}`: 1000, ` {"weight": 10} `: 10} {
		got, err := decodeWeightChange(strings.NewReader(body))
		if err != nil || got != want {
			t.Errorf("%s: %d, %v; want %d", body, got, err, want)
		}
	}
	for body, value := range map[string]string{
		`{"weight": 0}`: "0", `{"weight": -1}`: "-1", `{"weight": 1001}`: "1001",
		`{"weight": "ten"}`: `"ten"`, `{"weight": 10.5}`: "10.5", `{"weight": null}`: "null",
		`{"weight": true}`: "true", `{}`: `"weight" is missing`, `weight=10`: "must be the JSON object",
		`{"weight": 10, "share": 5}`: "share", `{"weight": 99999999999999999999}`: "99999999999999999999",
	} {
		_, err := decodeWeightChange(strings.NewReader(body))
		if !errors.Is(err, errBadWeight) {
			t.Errorf("%s: %v, want ErrBadWeight", body, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, value) || !strings.Contains(msg, "weight must be an integer from 1 to 1000") {
			t.Errorf("%s: %q, want the value %s and the rule", body, msg, value)
		}
	}
}

func TestWeightChangeBodyDecodes(t *testing.T) {
	got, err := decodeWeightChange(WeightChange{Weight: 10}.Body())
	if err != nil || got != 10 {
		t.Fatalf("WeightChange{10}.Body(): %d, %v", got, err)
	}
}

func TestCheckWeight(t *testing.T) {
	for _, w := range []int{MinWeight, DefaultWeight, MaxWeight} {
		if err := CheckWeight(w); err != nil {
			t.Errorf("CheckWeight(%d): %v", w, err)
		}
	}
	for _, w := range []int{0, -1, MaxWeight + 1} {
		if err := CheckWeight(w); !errors.Is(err, errBadWeight) {
			t.Errorf("CheckWeight(%d): %v, want ErrBadWeight", w, err)
		}
	}
}
