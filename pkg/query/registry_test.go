package query

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"projector/internal/testing/testredis"
	"projector/pkg/projections"
)

// TestEveryProjectionHasAQuery walks the projection registry: with one
// projection switched off (the others on), some Reader method answers
// ErrDisabled naming it, and every method that answers ErrDisabled names it.
// So each registered projection has a read-side query, and each query is
// switched off by its own projection's enabled key. Every method taking a
// context and returning an error is called, with zero arguments, against an
// empty real Redis.
func TestEveryProjectionHasAQuery(t *testing.T) {
	rdb := testredis.StartStandalone(t).Client()
	ctxType, errType := reflect.TypeFor[context.Context](), reflect.TypeFor[error]()
	for _, s := range projections.All() {
		cfg := projections.Defaults()
		s.SetEnabled(&cfg, false)
		r := reflect.ValueOf(New(rdb, Options{Projections: cfg, Now: func() time.Time { return testNow }}))
		var queries []string
		for i := range r.NumMethod() {
			m, mt := r.Type().Method(i), r.Method(i).Type()
			if mt.NumIn() == 0 || mt.In(0) != ctxType || mt.NumOut() == 0 || mt.Out(mt.NumOut()-1) != errType {
				continue
			}
			args := []reflect.Value{reflect.ValueOf(context.Background())}
			for j := 1; j < mt.NumIn(); j++ {
				args = append(args, reflect.Zero(mt.In(j)))
			}
			out := r.Method(i).Call(args)
			err, _ := out[len(out)-1].Interface().(error)
			if !errors.Is(err, ErrDisabled) {
				continue
			}
			if !strings.HasPrefix(err.Error(), s.Name+": ") {
				t.Errorf("%s off: %s answers %q", s.Name, m.Name, err)
			}
			queries = append(queries, m.Name)
		}
		if len(queries) == 0 {
			t.Errorf("%s has no query: no Reader method answers ErrDisabled while it is off", s.Name)
		}
	}
}
