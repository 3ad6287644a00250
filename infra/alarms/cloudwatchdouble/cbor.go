package cloudwatchdouble

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/smithy-go/encoding/cbor"

	"github.com/zero502/zero502/internal/testrig/awsdouble"
)

// input is an operation's decoded CBOR input map.
type input cbor.Map

// readInput decodes r's CBOR body; an empty body is an empty input, as the SDK sends an
// operation without members.
func readInput(r *http.Request) (input, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "SerializationException", "reading the body: %v", err)
	}
	if len(body) == 0 {
		return input{}, nil
	}
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/cbor" {
		return nil, awsdouble.Errorf(http.StatusUnsupportedMediaType, "UnsupportedMediaType",
			"Content-Type %q, want application/cbor", r.Header.Get("Content-Type"))
	}
	v, err := cbor.Decode(body)
	if err != nil {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "SerializationException", "the body is not CBOR: %v", err)
	}
	m, ok := v.(cbor.Map)
	if !ok {
		return nil, awsdouble.Errorf(http.StatusBadRequest, "SerializationException", "the body is a CBOR %T, not a map", v)
	}
	return input(m), nil
}

// text is member key, a text string; set says whether it was there (null counts as absent).
func (in input) text(key string) (v string, set bool, err error) {
	switch x := in[key].(type) {
	case nil, *cbor.Nil:
		return "", false, nil
	case cbor.String:
		return string(x), true, nil
	default:
		return "", false, validation("%s is a CBOR %T, want a text string", key, x)
	}
}

// integer is member key, an integer.
func (in input) integer(key string) (v int, set bool, err error) {
	switch x := in[key].(type) {
	case nil, *cbor.Nil:
		return 0, false, nil
	case cbor.Uint:
		if x > math.MaxInt32 {
			return 0, false, validation("%s %d is out of an integer's range", key, x)
		}
		return int(x), true, nil
	case cbor.NegInt:
		if x == 0 || x > math.MaxInt32 {
			return 0, false, validation("%s is out of an integer's range", key)
		}
		return -int(x), true, nil
	default:
		return 0, false, validation("%s is a CBOR %T, want an integer", key, x)
	}
}

// texts is member key, a list of text strings.
func (in input) texts(key string) ([]string, error) {
	switch x := in[key].(type) {
	case nil, *cbor.Nil:
		return nil, nil
	case cbor.List:
		out := make([]string, 0, len(x))
		for i, e := range x {
			s, ok := e.(cbor.String)
			if !ok {
				return nil, validation("%s[%d] is a CBOR %T, want a text string", key, i, e)
			}
			out = append(out, string(s))
		}
		return out, nil
	default:
		return nil, validation("%s is a CBOR %T, want a list", key, x)
	}
}

// value is v as CBOR: strings, booleans, ints, floats, times (tag 1, epoch seconds with
// milliseconds, as AWS sends them), lists and maps of those.
func value(v any) cbor.Value {
	switch x := v.(type) {
	case string:
		return cbor.String(x)
	case bool:
		return cbor.Bool(x)
	case int:
		if x < 0 {
			return cbor.NegInt(-x)
		}
		return cbor.Uint(x)
	case float64:
		return cbor.Float64(x)
	case time.Time:
		return &cbor.Tag{ID: 1, Value: cbor.Float64(float64(x.UnixMilli()) / 1000)}
	case []any:
		l := make(cbor.List, 0, len(x))
		for _, e := range x {
			l = append(l, value(e))
		}
		return l
	case map[string]any:
		m := make(cbor.Map, len(x))
		for k, e := range x {
			m[k] = value(e)
		}
		return m
	default:
		panic(fmt.Sprintf("cloudwatchdouble: no CBOR for %T", v))
	}
}

// writeOutput answers 200 with out as a CBOR map.
func writeOutput(w http.ResponseWriter, out map[string]any) error {
	writeCBOR(w, http.StatusOK, value(out))
	return nil
}

func writeCBOR(w http.ResponseWriter, status int, v cbor.Value) {
	body := cbor.Encode(v)
	w.Header().Set("Smithy-Protocol", "rpc-v2-cbor")
	w.Header().Set("Content-Type", "application/cbor")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// errorTypes are the __type of the error codes the double answers with: CloudWatch's own
// shapes by their shape ID, the others by their code.
var errorTypes = map[string]string{
	"InvalidNextToken":            "com.amazonaws.cloudwatch#InvalidNextToken",
	"InvalidParameterCombination": "com.amazonaws.cloudwatch#InvalidParameterCombinationException",
	"ValidationError":             "com.amazon.coral.validate#ValidationException",
}

// writeError answers err as RPC v2 CBOR errors are: the status, a CBOR map with __type and
// message, and (awsQuery-compatible) X-Amzn-Query-Error with the Query error code and fault.
// An error that is not an *awsdouble.Error is a 500 InternalFailure. The request ID is in the
// x-amzn-RequestId header only: the CBOR error map has no member for it.
func writeError(w http.ResponseWriter, err error) {
	ae, ok := err.(*awsdouble.Error)
	if !ok {
		ae = awsdouble.Errorf(http.StatusInternalServerError, "InternalFailure", "%s", err.Error())
	}
	typ, ok := errorTypes[ae.Code]
	if !ok {
		typ = ae.Code
	}
	fault := "Sender"
	if ae.Status >= 500 {
		fault = "Receiver"
	}
	w.Header().Set("X-Amzn-Query-Error", ae.Code+";"+fault)
	writeCBOR(w, ae.Status, cbor.Map{"__type": cbor.String(typ), "message": cbor.String(ae.Message)})
}

// makeToken is the NextToken of the page starting at offset of the query filter.
func makeToken(offset int, filter string) string {
	return base64.RawURLEncoding.EncodeToString(fmt.Appendf(nil, "%d|%s", offset, digest(filter)))
}

// parseToken is the offset a NextToken of the query filter starts at; a token that is not one,
// or is another query's, is InvalidNextToken.
func parseToken(token, filter string) (int, error) {
	bad := awsdouble.Errorf(http.StatusBadRequest, "InvalidNextToken", "The service returned an invalid NextToken.")
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil {
		return 0, bad
	}
	off, sum, ok := strings.Cut(string(raw), "|")
	n, err := strconv.Atoi(off)
	if !ok || err != nil || n < 0 || sum != digest(filter) {
		return 0, bad
	}
	return n, nil
}

func digest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:8])
}
