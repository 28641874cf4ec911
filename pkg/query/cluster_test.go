package query

import (
	"testing"
	"time"

	"projector/internal/testing/testredis"
)

// newClusterFixture returns a fixture over a fresh 3-master Redis Cluster.
func newClusterFixture(t *testing.T) *fixture {
	t.Helper()
	c := testredis.StartCluster(t, 3)
	return fixtureOn(t, c.Client(), time.UTC)
}
