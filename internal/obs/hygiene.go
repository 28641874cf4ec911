package obs

import "net/http"

// ContentSecurityPolicy is the Content-Security-Policy of every response.
// The dashboard loads only its own script and style sheet and fetches only
// the read API, all from this origin, and its icon is the empty data: URL
// (so no browser asks for /favicon.ico); nothing may frame a page, and a
// form may only submit to this origin. A JSON or text answer needs none of it.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; " +
	"img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// AllowedMethods is the Allow header of a 405: every endpoint only reads.
const AllowedMethods = "GET, HEAD"

// Harden wraps h for the HTTP servers of the consumer and of cmd/api: every
// response carries X-Content-Type-Options: nosniff, ContentSecurityPolicy
// and X-Frame-Options: DENY, and a method other than GET or HEAD gets 405
// with Allow: GET, HEAD before h sees the request.
func Harden(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Content-Security-Policy", ContentSecurityPolicy)
		hd.Set("X-Frame-Options", "DENY")
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			hd.Set("Allow", AllowedMethods)
			writeText(w, http.StatusMethodNotAllowed, "method "+r.Method+" not allowed: use GET or HEAD")
			return
		}
		h.ServeHTTP(w, r)
	})
}
