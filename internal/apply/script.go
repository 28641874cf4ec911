package apply

import (
	_ "embed"
	"strconv"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

//go:embed apply.lua
var applyLua string

// newScript returns the apply script (guard + write program for one slot).
func newScript() *redis.Script { return redis.NewScript(applyLua) }

// appendWrites encodes writes as the script's 10-value write program.
func appendWrites(args []any, ws []projections.Write) []any {
	for i := range ws {
		w := &ws[i]
		member := w.Member
		num := w.Score
		switch w.Kind {
		case projections.SetValue:
			member = w.Value
		case projections.IncrBy, projections.ZIncrBy:
			num = w.Delta
		}
		args = append(args,
			strconv.Itoa(int(w.Kind)), w.Key, member, strconv.FormatInt(num, 10),
			strconv.FormatInt(w.ExpireAt, 10), strconv.Itoa(w.Trim.Keep),
			strconv.FormatInt(w.Trim.RetentionMs, 10), w.Guard, w.Registry, w.Projection)
	}
	return args
}
