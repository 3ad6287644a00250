package adminapi

import "fmt"

// Target weights: a target's share of new requests is its weight over the sum of the weights
// of the targets in rotation (100 and 900: 10% and 90%). Every target starts at DefaultWeight,
// so equal weights are plain round robin.
const (
	MinWeight     = 1
	MaxWeight     = 1000
	DefaultWeight = 100
)

// errBadWeight is the rule a weight breaks; the HTTP layer answers it 400.
var errBadWeight = fmt.Errorf("weight must be an integer from %d to %d (default %d: the share of new requests is "+
	"the weight over the sum of the weights in rotation; to stop new requests to a target, drain it)",
	MinWeight, MaxWeight, DefaultWeight)

// CheckWeight says whether w is a weight a target may have.
func CheckWeight(w int) error {
	if w < MinWeight || w > MaxWeight {
		return fmt.Errorf("weight %d: %w", w, errBadWeight)
	}
	return nil
}
