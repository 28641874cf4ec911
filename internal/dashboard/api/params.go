package api

import (
	"errors"
	"net/url"
	"slices"
	"strconv"
	"time"

	"projector/pkg/events"
	"projector/pkg/query"
)

// params reads the query string of one request. Its methods record the
// first problem; err returns it as a *query.InputError.
type params struct {
	q   url.Values
	err error
}

// newParams rejects parameters other than allowed and repeated ones.
func newParams(raw string, allowed ...string) *params {
	q, err := url.ParseQuery(raw)
	p := &params{q: q}
	if err != nil {
		p.fail("query", "not a valid query string: "+err.Error())
		return p
	}
	for name, vs := range q {
		if !slices.Contains(allowed, name) {
			p.fail(name, "unknown parameter (allowed: "+join(allowed)+")")
		} else if len(vs) > 1 {
			p.fail(name, "given more than once")
		}
	}
	return p
}

func (p *params) fail(name, problem string) {
	if p.err == nil {
		p.err = &query.InputError{Param: name, Problem: problem}
	}
}

// has reports whether the parameter is present (even empty).
func (p *params) has(name string) bool { _, ok := p.q[name]; return ok }

// str returns the parameter or def when absent.
func (p *params) str(name, def string) string {
	if !p.has(name) {
		return def
	}
	return p.q.Get(name)
}

// integer returns the parameter in [min, max], or def when absent.
func (p *params) integer(name string, def, min, max int) int {
	if !p.has(name) {
		return def
	}
	s := p.q.Get(name)
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		p.fail(name, "must be an integer in "+strconv.Itoa(min)+".."+strconv.Itoa(max)+" (got "+strconv.Quote(s)+")")
		return def
	}
	return n
}

// name returns a user, product, device or store id following docs/contract.md section 2;
// required names must be present, optional ones may be absent ("").
func (p *params) name(name string, required bool) string {
	if !p.has(name) && !required {
		return ""
	}
	v := p.q.Get(name)
	if err := events.CheckName(name, v); err != nil {
		var ve *events.ValidationError
		switch {
		case !p.has(name):
			p.fail(name, "required")
		case errors.As(err, &ve):
			p.fail(name, ve.Rule)
		default:
			p.fail(name, err.Error())
		}
		return ""
	}
	return v
}

// ranking returns a ranking name (query.ParseRanking), required.
func (p *params) ranking(name string) query.Ranking {
	rk, err := query.ParseRanking(p.q.Get(name))
	var ie *query.InputError
	if errors.As(err, &ie) {
		p.fail(name, ie.Problem)
	}
	return rk
}

// time returns a range bound (see query.ParseTime), required.
func (p *params) time(name string, loc *time.Location) time.Time {
	s := p.q.Get(name)
	if !p.has(name) {
		p.fail(name, "required")
		return time.Time{}
	}
	t, ok := query.ParseTime(s, loc)
	if !ok {
		p.fail(name, "must be a bucket (2026, 2026-12, 2026-12-02, 2026-12-02T08), an RFC 3339 time or Unix ms (got "+strconv.Quote(s)+")")
	}
	return t
}

// pageRequest reads page/size or cursor paging: a cursor parameter (empty
// for the first page) selects cursor paging.
func (p *params) pageRequest() query.PageRequest {
	req := query.PageRequest{Size: p.integer("size", 10, 1, query.MaxPageSize)}
	if p.has("cursor") {
		if p.has("page") {
			p.fail("page", "page by rank or by cursor, not both")
		}
		req.Cursor, req.Token = true, p.q.Get("cursor")
		if len(req.Token) > query.MaxCursorLen {
			p.fail("cursor", "too long")
		}
		return req
	}
	req.Page = p.integer("page", 1, 1, query.MaxPage)
	return req
}

func join(list []string) string {
	out := ""
	for i, s := range list {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	if out == "" {
		return "none"
	}
	return out
}
