package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

type httpResult struct {
	Code   int
	Header http.Header
	Body   string
}

func newRecorder() *httptest.ResponseRecorder { return httptest.NewRecorder() }

// newRequest builds a request; headers are name, value pairs.
func newRequest(method, path, body string, headers map[string]string) *http.Request {
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req := httptest.NewRequest(method, "http://appliance.test"+path, r)
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	return req
}
