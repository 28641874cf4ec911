package bench

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"time"
)

// member is one measured consumer process: projector's consumer binary or
// the peer (internal/testing/bench/peer), each in its own consumer group.
type member struct {
	name  string // "consumer" or "peer": names its log and profile files
	group string
	proc  *Proc
	addr  string // its HTTP address (metrics, pprof)
	// events is the counter of records it has finished (every outcome);
	// batch is the prefix of its records-per-batch histogram.
	events, batch string
	// scriptCalls is its apply-script counter ("" for none).
	scriptCalls string
}

// groupPeer is the consumer group of the peer.
const groupPeer = "peer"

// startConsumer starts projector's consumer binary.
func (e *env) startConsumer() (*member, error) {
	m := &member{name: "consumer", group: group, events: "projector_events_total", batch: "projector_batch_events",
		scriptCalls: "projector_script_calls_total"}
	return m, e.startMember(m, e.consumer, nil)
}

// startPeer starts the peer (cfg.PeerCommand) with the consumer's settings
// and its own group.
func (e *env) startPeer() (*member, error) {
	m := &member{name: "peer", group: groupPeer, events: "peer_events_total", batch: "peer_batch_events"}
	return m, e.startMember(m, e.cfg.PeerCommand[0], e.cfg.PeerCommand[1:])
}

// startMember runs bin with args and the consumer's environment (its group
// m.group), serving HTTP on a free loopback port.
func (e *env) startMember(m *member, bin string, args []string) error {
	if e.round > 1 {
		m.name += "-r" + strconv.Itoa(e.round) // its own log and profile files
	}
	port, err := freePort(false)
	if err != nil {
		return err
	}
	m.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	env := Env(e.kafka.Addr(), e.redis, m.addr, append(e.cfg.ConsumerEnv, "PROJECTOR_KAFKA_GROUP_ID="+m.group)...)
	if m.proc, err = Start(bin, args, env, filepath.Join(e.cfg.Dir, m.name+".log")); err != nil {
		return err
	}
	m.proc.MetricsURL = "http://" + m.addr + "/metrics"
	// Its metrics are served once it has started (a member whose group is
	// caught up already is sampled at once).
	deadline := time.Now().Add(time.Minute)
	for {
		if _, err = m.proc.Metric(context.Background(), m.events, ""); err == nil {
			return nil
		}
		select {
		case <-m.proc.Done():
			return fmt.Errorf("%s exited at start; see %s", m.name, m.proc.LogPath)
		default:
		}
		if time.Now().After(deadline) {
			m.proc.Stop()
			return fmt.Errorf("%s: no metrics a minute after start: %w", m.name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// stop stops the process and logs its peak memory.
func (e *env) stop(m *member) {
	m.proc.Stop()
	e.logf("%s: peak RSS %d MiB", m.name, m.proc.PeakRSS()>>20)
}

// sample is one observation of a running member.
type sample struct {
	at                     time.Time
	events                 float64
	batches, batched       float64 // batches and their records so far
	redis, consumer, kafka float64
	replicas               float64
	self, idle             float64 // this process's CPU, the machine's idle time (seconds)
}

// sample observes m and the servers.
func (e *env) sample(ctx context.Context, m *member) (sample, error) {
	s := sample{at: time.Now()}
	var err error
	if s.events, err = m.proc.Metric(ctx, m.events, ""); err != nil {
		return s, err
	}
	if s.batches, err = m.proc.Metric(ctx, m.batch+"_count", ""); err != nil {
		return s, err
	}
	if s.batched, err = m.proc.Metric(ctx, m.batch+"_sum", ""); err != nil {
		return s, err
	}
	if s.redis, err = e.redis.CPUSeconds(ctx); err != nil {
		return s, err
	}
	if s.kafka, err = e.kafka.CPUSeconds(); err != nil {
		return s, err
	}
	if s.replicas, err = e.redis.ReplicaCPUSeconds(ctx); err != nil {
		return s, err
	}
	if s.idle, err = idleSeconds(); err != nil {
		return s, err
	}
	s.self = selfCPUSeconds()
	s.consumer, err = m.proc.CPUSeconds()
	return s, err
}

// waitLag waits until m's group has committed everything, for up to limit.
func (e *env) waitLag(ctx context.Context, m *member, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		lag, err := e.kafka.Lag(ctx, m.group, Topics)
		if err == nil && lag == 0 {
			return nil
		}
		select {
		case <-m.proc.Done():
			return fmt.Errorf("%s exited; see %s", m.name, m.proc.LogPath)
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s: group %s lag still %d (%v) after %v", m.name, m.group, lag, err, limit)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// profile saves a CPU profile of m as Dir/<name>.pprof when configured.
func (e *env) profile(ctx context.Context, m *member) error {
	return e.profileAs(ctx, m, m.name)
}

// profileAs saves a CPU profile of m as Dir/<file>.pprof when configured
// (-profile: the live phases are profiled as <name>-live<rate>).
func (e *env) profileAs(ctx context.Context, m *member, file string) error {
	if e.cfg.ProfileSeconds <= 0 {
		return nil
	}
	url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", m.addr, e.cfg.ProfileSeconds)
	return Fetch(ctx, url, filepath.Join(e.cfg.Dir, file+".pprof"))
}
