package mesh

import "time"

// Report is what a server says about itself: its checks (in the write-up, "is the traffic
// listener on 443 alive" and "is the VPN service running").
type Report struct {
	Server string    `json:"server"`
	At     time.Time `json:"at"`
	// Healthy is the server's own conclusion; Detail says which check failed when it is false.
	Healthy bool   `json:"healthy"`
	Detail  string `json:"detail,omitempty"`
	// Checker is the sender's own view of its role: whether its --checkers lists it as a server
	// its operator trusts to judge others ("use this server to check whether other servers are
	// blocked"). Informational only: a receiver judges with its own --checkers and replaces it
	// (a claim that disagrees is logged, never believed).
	Checker bool `json:"checker,omitempty"`
	// Service is the server's service URL as its users reach it (see Service): the other
	// servers probe it. Empty: they probe the mesh's own /health.
	Service string `json:"service,omitempty"`
	// Metrics are the server's basic numbers at the time of the report.
	Metrics *Metrics `json:"metrics,omitempty"`
}

// Probe is one attempt of a witness (Prober) to reach a neighbour (Target) the way a client
// would. Err says why it failed.
type Probe struct {
	Prober string    `json:"prober"`
	Target string    `json:"target"`
	OK     bool      `json:"ok"`
	Err    string    `json:"err,omitempty"`
	At     time.Time `json:"at"`
}

// Bulletin is what a Node sends its peers every round: its own report and its probes of them.
type Bulletin struct {
	Report Report  `json:"report"`
	Probes []Probe `json:"probes"`
}
