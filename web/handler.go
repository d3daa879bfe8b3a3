package web

import (
	"bytes"
	"embed"
	"fmt"
	"html/template"
	"net/http"
	"time"

	"github.com/ncpos/ncpos/ipc"
)

//go:embed templates/*.html
var templates embed.FS

var pageTmpl = template.Must(template.New("").Funcs(template.FuncMap{
	"duration": func(secs float64) string {
		return (time.Duration(secs) * time.Second).String()
	},
	"bytes": humanBytes,
}).ParseFS(templates, "templates/*.html"))

// NewHandler returns statusd's HTTP handler.
func NewHandler(c *Collector) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /api/v1/system", func(w http.ResponseWriter, r *http.Request) {
		ipc.WriteJSON(w, c.Collect(r.Context()))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		var buf bytes.Buffer
		if err := pageTmpl.ExecuteTemplate(&buf, "status.html", c.Collect(r.Context())); err != nil {
			http.Error(w, "rendering status page: "+err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(buf.Bytes())
	})
	return securityHeaders(mux)
}

// securityHeaders keeps the page from being framed or sniffed; it embeds
// everything it needs, so it asks for nothing from elsewhere.
func securityHeaders(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("X-Frame-Options", "DENY")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'")
		h.ServeHTTP(w, r)
	})
}

func humanBytes(n uint64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := uint64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}
