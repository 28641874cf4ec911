package apply

import (
	"time"

	"github.com/redis/go-redis/v9"

	"projector/internal/coord"
	"projector/pkg/projections"
)

// Meta is what a consumer asks of Redis beside applying batches: the
// coordination state of px:meta:{g} (coord.Meta: status, tokens, creation,
// rolled_back), what Redis holds as applied (ReadEvidence) and which servers
// it is (Identity).
type Meta struct {
	*coord.Meta
	rdb   redis.UniversalClient
	keys  projections.Keys
	nodes masterWatermarks
}

// NewMeta returns the Meta of the projections under keyPrefix. evidence
// makes ReadEvidence read, on Redis Cluster, each master's own watermarks
// too (those an Applier with Guards.Evidence keeps).
func NewMeta(rdb redis.UniversalClient, keyPrefix string, now func() time.Time, evidence bool) *Meta {
	keys := projections.Keys{Prefix: keyPrefix}
	return &Meta{Meta: coord.New(rdb, keyPrefix, now), rdb: rdb, keys: keys, nodes: masterWatermarks{rdb: rdb, keys: keys, on: evidence}}
}
