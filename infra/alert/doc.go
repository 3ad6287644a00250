// Package alert tells someone: an Alert is a JSON document sent to a webhook (an HTTP POST,
// retried with the backoff package's exponential wait with full jitter) and, optionally, handed
// to a local command on stdin. A Tracker decides when to alert: once per confirmed transition of
// a subject's state, never again for a standing state, and never for a state that did not hold
// for Confirm observations in a row (no flapping).
//
// The edge survey (`zero502 edgepick survey`) and the mesh (`zero502 mesh serve`) both alert
// through it.
package alert
