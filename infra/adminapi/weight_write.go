package adminapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// WeightChange is the body of PUT {collection}/{addr}/weight: {"weight": 10}.
type WeightChange struct {
	Weight int `json:"weight"`
}

// Body is c as the JSON body of the write, for a client to send.
func (c WeightChange) Body() io.Reader {
	b, _ := json.Marshal(c) // an int field: never fails
	return bytes.NewReader(b)
}

// maxWeightBody bounds the body of a weight write: {"weight": 1000} with room for spaces.
const maxWeightBody = 1 << 10

// decodeWeightChange reads a weight write's body, {"weight": N}, and checks N: a body that is
// not that JSON object, a missing weight, one that is not an integer and one out of range are
// errors naming the field and the rule (errBadWeight).
func decodeWeightChange(body io.Reader) (int, error) {
	var raw struct {
		Weight json.RawMessage `json:"weight"`
	}
	dec := json.NewDecoder(io.LimitReader(body, maxWeightBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return 0, fmt.Errorf(`weight change: the body must be the JSON object {"weight": N}: %v; %w`, err, errBadWeight)
	}
	if raw.Weight == nil {
		return 0, fmt.Errorf(`weight change: the field "weight" is missing: %w`, errBadWeight)
	}
	var v any
	num := json.NewDecoder(bytes.NewReader(raw.Weight))
	num.UseNumber()
	if err := num.Decode(&v); err != nil {
		return 0, fmt.Errorf("weight %s: %w", raw.Weight, errBadWeight)
	}
	n, isNumber := v.(json.Number)
	if !isNumber {
		return 0, fmt.Errorf("weight %s: not a number: %w", raw.Weight, errBadWeight)
	}
	w, err := n.Int64()
	if err != nil {
		return 0, fmt.Errorf("weight %s: %w", n, errBadWeight) // a fraction, or beyond int64
	}
	if w < MinWeight || w > MaxWeight {
		return 0, fmt.Errorf("weight %d: %w", w, errBadWeight)
	}
	return int(w), nil
}

// Weights are the targets whose weights the write API sets (the LB's backends).
type Weights interface {
	// SetWeight gives addr weight, which applies to its next picks and in every state it
	// goes through; an unknown addr is ErrUnknownTarget, a bad weight errBadWeight.
	SetWeight(addr string, weight int) (BackendStatus, error)
}

// HandleWeightWrites serves the weight write on collection, under the same guard as the other
// writes (the mux's handler):
//
//	PUT {collection}/{addr}/weight  {"weight": N}, N from 1 to 1000: 200 and the target's
//	                                BackendStatus; the same weight again changes nothing (200);
//	                                a bad body or weight: 400; unknown target: 404
func HandleWeightWrites(mux *http.ServeMux, collection string, t Weights) {
	mux.HandleFunc("PUT "+collection+"/{addr}/weight", func(w http.ResponseWriter, r *http.Request) {
		weight, err := decodeWeightChange(r.Body)
		if err != nil {
			WriteError(w, err)
			return
		}
		st, err := t.SetWeight(r.PathValue("addr"), weight)
		if err != nil {
			WriteError(w, err)
			return
		}
		WriteJSON(w, http.StatusOK, st)
	})
}
