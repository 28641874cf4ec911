package apply

import (
	_ "embed"

	"github.com/redis/go-redis/v9"

	"projector/pkg/projections"
)

//go:embed apply.lua
var applyLua string

// newScript returns the apply script (guard + write program for one slot).
func newScript() *redis.Script { return redis.NewScript(applyLua) }

// appendWrites encodes writes as the script's write program: per write its
// kind and the values that kind needs (apply.lua reads them back).
func appendWrites(args []any, ws []projections.Write) []any {
	for i := range ws {
		w := &ws[i]
		args = append(args, kindArg[w.Kind], w.Key)
		switch w.Kind {
		case projections.IncrBy:
			args = append(args, w.Delta, w.ExpireAt)
		case projections.ZIncrBy:
			args = append(args, w.Member, w.Delta, w.ExpireAt)
		case projections.ZAddMax:
			args = append(args, w.Member, w.Score, w.ExpireAt, w.Trim.Keep, w.Trim.RetentionMs, w.Guard)
		case projections.SetValue:
			args = append(args, w.Value, w.ExpireAt)
		case projections.SetMax:
			args = append(args, w.Score, w.ExpireAt)
		case projections.ZRemUpTo:
			args = append(args, w.Score, w.Registry)
		case projections.ZRemMemberUpTo:
			args = append(args, w.Member, w.Score)
		case projections.ZRemPrefixUpTo:
			args = append(args, w.Member, w.Score, w.Registry)
		case projections.SAdd:
			args = append(args, w.Member, w.ExpireAt)
		}
	}
	return args
}

// argCount is the number of script arguments appendWrites makes of ws.
func argCount(ws []projections.Write) int {
	n := 0
	for i := range ws {
		n += 2 + kindValues[ws[i].Kind]
	}
	return n
}

// kindValues is the number of values each write kind has after its key.
var kindValues = [...]int{projections.IncrBy: 2, projections.ZIncrBy: 3, projections.ZAddMax: 6, projections.SetValue: 2,
	projections.SetMax: 2, projections.ZRemUpTo: 2, projections.ZRemMemberUpTo: 2, projections.ZRemPrefixUpTo: 3, projections.SAdd: 2}

// kindArg is the script's name of each write kind.
var kindArg = [...]any{projections.IncrBy: "1", projections.ZIncrBy: "2", projections.ZAddMax: "3", projections.SetValue: "4",
	projections.SetMax: "5", projections.ZRemUpTo: "6", projections.ZRemMemberUpTo: "7", projections.ZRemPrefixUpTo: "8", projections.SAdd: "9"}
