package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokerShare is what the Kafka broker spent in one window of steady-rate
// traffic while one reader of the log (or none) ran beside the load
// generator.
type BrokerShare struct {
	// Round is the round of the broker-share phase (1, 2, ...).
	Round int
	// Rate is the events per second produced.
	Rate int
	// Reader is ReaderNone (the load generator alone), ReaderConsumer
	// (projector's), ReaderPeer or ReaderJava (the console consumer of the
	// Apache Kafka distribution).
	Reader string
	// Events is the records produced in the window.
	Events float64
	// BrokerCPU is the broker's CPU per produced event, in microseconds.
	BrokerCPU float64
	// Fetches is the fetch requests per second the broker served (its
	// RequestsPerSec metric of Fetch requests, read over JMX).
	Fetches float64
}

// The readers of the broker-share phase.
const (
	ReaderNone     = "none"
	ReaderConsumer = "consumer"
	ReaderPeer     = "peer"
	ReaderJava     = "java"
)

// groupJava is the console consumer's group.
const groupJava = "bench-java"

// String is the share as a log line.
func (s BrokerShare) String() string {
	return fmt.Sprintf("round %d, %d ev/s, %s: broker %.2f us/ev, %.0f fetch requests/s (%.0f events)", s.Round, s.Rate, s.Reader, s.BrokerCPU, s.Fetches, s.Events)
}

// brokerShares measures at each steady rate the broker's CPU per event and
// the fetch requests it served per second: with the load generator alone,
// then with projector's consumer, the peer (when configured) and the Java
// console consumer reading the live log, one at a time; in LiveRounds
// rounds of all of them (the broker's CPU drifts with the machine's speed,
// so each reader's share is taken against the load generator alone in the
// same round). Each reader starts caught up with the log and reads it for
// the whole window.
func (e *env) brokerShares(ctx context.Context, p *kgo.Client) ([]BrokerShare, error) {
	readers := []string{ReaderNone, ReaderConsumer}
	if len(e.cfg.PeerCommand) > 0 {
		readers = append(readers, ReaderPeer)
	}
	readers = append(readers, ReaderJava)
	var out []BrokerShare
	for round := 1; round <= max(e.cfg.LiveRounds, 1); round++ {
		for _, reader := range readers {
			stop, err := e.startReader(ctx, reader)
			if err != nil {
				return out, err
			}
			for _, rate := range []int{e.cfg.Latency.Rate, e.cfg.HighRate} {
				if rate <= 0 {
					continue
				}
				s, err := e.brokerWindow(ctx, p, reader, rate)
				if err != nil {
					stop()
					return out, err
				}
				s.Round = round
				e.logf("broker share: %v", s)
				out = append(out, s)
			}
			stop()
		}
	}
	return out, nil
}

// startReader starts a reader of the live log, caught up with it, and
// returns how to stop it.
func (e *env) startReader(ctx context.Context, reader string) (func(), error) {
	var m *member
	var err error
	switch reader {
	case ReaderNone:
		return func() {}, nil
	case ReaderConsumer:
		m, err = e.startConsumer()
	case ReaderPeer:
		m, err = e.startPeer()
	case ReaderJava:
		return e.startJava(ctx)
	default:
		return nil, fmt.Errorf("unknown reader %q", reader)
	}
	if err != nil {
		return nil, err
	}
	e.logf("broker share: %s catching up with the log", m.name)
	if err := e.waitLag(ctx, m, 5*time.Minute); err != nil {
		e.stop(m)
		return nil, err
	}
	return func() { e.stop(m) }, nil
}

// startJava starts the console consumer of the Apache Kafka distribution in
// a group of its own, with the Java client's default fetch settings
// (fetch.min.bytes 1, fetch.max.wait.ms 500, one fetch request per broker
// and a fetch session) and read_committed as projector reads, its records
// written to /dev/null. A new group starts at the end of the log.
func (e *env) startJava(ctx context.Context) (func(), error) {
	args := []string{"-Xmx512m", "-cp", filepath.Join(e.kafka.lib, "*"), "org.apache.kafka.tools.consumer.ConsoleConsumer",
		"--bootstrap-server", e.kafka.Addr(), "--include", "^(" + strings.Join(Topics, "|") + ")$", "--group", groupJava,
		"--consumer-property", "isolation.level=read_committed"}
	log, err := os.Create(filepath.Join(e.cfg.Dir, "java-consumer.log"))
	if err != nil {
		return nil, err
	}
	cmd := exec.CommandContext(ctx, "java", args...)
	cmd.Stdout, cmd.Stderr = io.Discard, log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start the console consumer: %w", err)
	}
	stop := func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		_ = log.Close()
	}
	// It has joined once its group is stable; then it reads from the end.
	deadline := time.Now().Add(time.Minute)
	for {
		if stable, err := e.kafka.GroupStable(ctx, groupJava); err == nil && stable {
			time.Sleep(2 * time.Second) // its first fetches
			return stop, nil
		}
		if time.Now().After(deadline) {
			stop()
			return nil, fmt.Errorf("the console consumer did not join its group in a minute; see %s", log.Name())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// brokerWindow produces at rate for the latency phase's duration and
// measures the broker over that window, after a warm-up of at least
// brokerSettle: its CPU between the window's ends, and its count of fetch
// requests read over JMX at the window's start and a second before its end.
func (e *env) brokerWindow(ctx context.Context, p *kgo.Client, reader string, rate int) (BrokerShare, error) {
	s := BrokerShare{Rate: rate, Reader: reader}
	lc := e.cfg.Latency
	lc.Rate, lc.Round = rate, e.round
	lc.Warmup = min(max(lc.Warmup, brokerSettle), lc.Duration/2)
	var (
		cpu       [2]float64
		at        [2]time.Time
		readings  [2]chan fetchReading
		markErr   error
		nextMark  int
		readLater = lc.Duration - time.Second
	)
	for i := range readings {
		readings[i] = make(chan fetchReading, 1)
	}
	read := func(i int) {
		go func() { readings[i] <- e.kafka.fetchCount(ctx) }()
	}
	err := producePaced(ctx, p, lc, func(now time.Time, el time.Duration) error {
		switch {
		case nextMark == 0 && el >= lc.Warmup:
			cpu[0], markErr = e.kafka.CPUSeconds()
			at[0] = now
			read(0)
			nextMark++
		case nextMark == 1 && el >= readLater:
			read(1)
			nextMark++
		}
		return markErr
	})
	if err != nil {
		return s, err
	}
	if nextMark != 2 {
		return s, fmt.Errorf("broker share: the window (%v) is shorter than its warm-up and a second", lc.Duration)
	}
	if cpu[1], err = e.kafka.CPUSeconds(); err != nil {
		return s, err
	}
	at[1] = time.Now()
	window := at[1].Sub(at[0])
	s.Events = float64(rate) * window.Seconds()
	s.BrokerCPU = 1e6 * (cpu[1] - cpu[0]) / max(s.Events, 1)
	r0, r1 := <-readings[0], <-readings[1]
	if r0.err != nil || r1.err != nil {
		return s, fmt.Errorf("broker share: fetch requests: %w", errors.Join(r0.err, r1.err))
	}
	if d := r1.at.Sub(r0.at); d > 0 {
		s.Fetches = (r1.count - r0.count) / d.Seconds()
	}
	return s, nil
}

// brokerSettle is the least warm-up of a broker-share window: the seconds
// after a reader caught up with the log (projector's consumer and the peer
// read the records produced while the other readers ran) or joined its
// group (the Java consumer) are not what it costs the broker on live
// traffic, and with a 2 s warm-up they fell into each reader's first window
// only.
const brokerSettle = 8 * time.Second

// fetchReading is one reading of the broker's count of fetch requests, at
// the broker's clock.
type fetchReading struct {
	at    time.Time
	count float64
	err   error
}

// fetchMetrics are the broker's request metrics of fetch requests, one per
// request version a client used.
const fetchMetrics = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch,*"

// fetchCount reads the broker's count of fetch requests so far over JMX,
// with JmxTool of the Apache Kafka distribution (0 before any fetch).
func (k *Kafka) fetchCount(ctx context.Context) fetchReading {
	url := fmt.Sprintf("service:jmx:rmi:///jndi/rmi://127.0.0.1:%d/jmxrmi", k.jmxPort)
	out, err := exec.CommandContext(ctx, "java", "-Xmx64m", "-XX:TieredStopAtLevel=1", "-cp", filepath.Join(k.lib, "*"),
		"org.apache.kafka.tools.JmxTool", "--jmx-url", url, "--object-name", fetchMetrics, "--attributes", "Count",
		"--one-time", "true", "--report-format", "csv").CombinedOutput()
	if err != nil {
		return fetchReading{err: fmt.Errorf("JmxTool: %w: %s", err, out)}
	}
	ms, count, ok := parseJmxReport(string(out))
	if !ok {
		return fetchReading{err: fmt.Errorf("JmxTool: no time in %q", out)}
	}
	return fetchReading{at: time.UnixMilli(ms), count: count}
}

// parseJmxReport reads JmxTool's one-time csv report: a line time,"<Unix
// ms>", then a line <object>:Count,"<count>" per matching object, summed.
func parseJmxReport(out string) (ms int64, count float64, ok bool) {
	for _, line := range strings.Split(out, "\n") {
		line = strings.TrimSpace(line)
		i := strings.LastIndexByte(line, ',') // object names hold commas
		if i < 0 {
			continue
		}
		name, v := line[:i], strings.Trim(line[i+1:], `"`)
		switch {
		case name == "time":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return 0, 0, false
			}
			ms, ok = n, true
		case strings.HasSuffix(name, ":Count"):
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				count += f
			}
		}
	}
	return ms, count, ok
}
