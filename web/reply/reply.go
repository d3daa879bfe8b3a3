// Package reply writes statusd's API answers and reads its requests'
// bodies, alike for every route: errors as {"error": "…"} with their
// status, JSON bodies checked for their type, size and fields.
package reply

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
)

// MaxBodyBytes bounds a control request's body; more is refused with 413.
const MaxBodyBytes = 64 << 10

// Error answers {"error": msg} with code.
func Error(w http.ResponseWriter, code int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

// DecodeJSON reads a request's body into v, answering the error itself:
// 415 for another content type, 413 past limit bytes (MaxBodyBytes when
// 0), 400 for anything that is not one JSON object of v's fields.
func DecodeJSON(w http.ResponseWriter, r *http.Request, v any, limit int64) bool {
	if limit <= 0 {
		limit = MaxBodyBytes
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || mt != "application/json" {
			Error(w, http.StatusUnsupportedMediaType, "want Content-Type: application/json")
			return false
		}
	}
	dec := json.NewDecoder(http.MaxBytesReader(Innermost(w), r.Body, limit))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("more than one JSON value")
	}
	if err == nil {
		_, err = io.Copy(io.Discard, dec.Buffered())
	}
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes", limit))
		return false
	case err != nil:
		Error(w, http.StatusBadRequest, "bad JSON: "+err.Error())
		return false
	}
	return true
}

// Innermost is the server's own ResponseWriter under the wrappers that
// record an answer (they have Unwrap, as http.ResponseController wants).
// http.MaxBytesReader needs it: through it, a body over the limit closes
// the connection after the answer instead of waiting for the rest.
func Innermost(w http.ResponseWriter) http.ResponseWriter {
	for {
		u, ok := w.(interface{ Unwrap() http.ResponseWriter })
		if !ok {
			return w
		}
		w = u.Unwrap()
	}
}
