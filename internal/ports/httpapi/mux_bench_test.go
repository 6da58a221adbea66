package httpapi

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// BenchmarkRouterAgainstServeMux finds the route of the same requests through the
// API's router (find: the adapter from API Gateway's path, around http.ServeMux) and
// with a bare ServeMux lookup of the same patterns: what the adapter adds. Run
// before the router moved to ServeMux, the same benchmark compared the hand-written
// matcher it replaced (BENCHMARKS.md, "Hot paths").
func BenchmarkRouterAgainstServeMux(b *testing.B) {
	a := New(Config{})
	mux := http.NewServeMux()
	for _, rt := range a.table() {
		mux.HandleFunc(rt.Method+" "+rt.Pattern, func(http.ResponseWriter, *http.Request) {})
	}
	for _, rt := range []struct{ method, path string }{
		{http.MethodPost, "/rentals"},
		{http.MethodPost, "/bikes/bike-42/return"},
		{http.MethodGet, "/payments/pending"},
	} {
		name := rt.method + strings.ReplaceAll(rt.path, "/", "_")
		b.Run("router/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if r, _, _ := a.find(rt.method, rt.path); r == nil {
					b.Fatal("no route")
				}
			}
		})
		b.Run("servemux/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				// What an adapter from API Gateway's event must build for every call.
				req := &http.Request{Method: rt.method, URL: &url.URL{Path: rt.path}, Host: "api"}
				if _, pattern := mux.Handler(req); pattern == "" {
					b.Fatal("no route")
				}
			}
		})
	}
}
