package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// BrokerShare is what the Kafka broker spent in one window of steady-rate
// traffic while one reader of the log (or none) ran beside the load
// generator.
type BrokerShare struct {
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
	return fmt.Sprintf("%d ev/s, %s: broker %.2f us/ev, %.0f fetch requests/s (%.0f events)", s.Rate, s.Reader, s.BrokerCPU, s.Fetches, s.Events)
}

// brokerShares measures at each steady rate the broker's CPU per event and
// the fetch requests it served per second: with the load generator alone,
// then with projector's consumer, the peer (when configured) and the Java
// console consumer reading the live log, one at a time. Each reader starts
// caught up with the log and reads it for the whole window.
func (e *env) brokerShares(ctx context.Context, p *kgo.Client) ([]BrokerShare, error) {
	jmx, err := e.kafka.watchFetches(ctx, filepath.Join(e.cfg.Dir, "jmx.log"))
	if err != nil {
		return nil, err
	}
	defer jmx.stop()
	readers := []string{ReaderNone, ReaderConsumer}
	if len(e.cfg.PeerCommand) > 0 {
		readers = append(readers, ReaderPeer)
	}
	readers = append(readers, ReaderJava)
	var out []BrokerShare
	for _, reader := range readers {
		stop, err := e.startReader(ctx, reader)
		if err != nil {
			return out, err
		}
		for _, rate := range []int{e.cfg.Latency.Rate, e.cfg.HighRate} {
			if rate <= 0 {
				continue
			}
			s, err := e.brokerWindow(ctx, p, jmx, reader, rate)
			if err != nil {
				stop()
				return out, err
			}
			e.logf("broker share: %v", s)
			out = append(out, s)
		}
		stop()
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
	// It has joined once its group holds a member; then it reads from the end.
	deadline := time.Now().Add(time.Minute)
	for {
		if members, err := e.kafka.GroupMembers(ctx, groupJava); err == nil && members > 0 {
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
// measures the broker over that window, after its warm-up.
func (e *env) brokerWindow(ctx context.Context, p *kgo.Client, jmx *fetchWatch, reader string, rate int) (BrokerShare, error) {
	s := BrokerShare{Rate: rate, Reader: reader}
	lc := e.cfg.Latency
	lc.Rate, lc.Round = rate, e.round
	type mark struct {
		at      time.Time
		cpu     float64
		fetches float64
	}
	var marks []mark
	var markErr error
	take := func(now time.Time) {
		cpu, err := e.kafka.CPUSeconds()
		if err != nil {
			markErr = err
		}
		marks = append(marks, mark{at: now, cpu: cpu})
	}
	err := producePaced(ctx, p, lc, func(now time.Time, el time.Duration) error {
		if len(marks) == 0 && el >= lc.Warmup {
			take(now)
		}
		return markErr
	})
	if err != nil {
		return s, err
	}
	take(time.Now())
	if markErr != nil || len(marks) != 2 {
		return s, fmt.Errorf("broker share: %v (%d samples)", markErr, len(marks))
	}
	window := marks[1].at.Sub(marks[0].at)
	s.Events = float64(rate) * window.Seconds()
	s.BrokerCPU = 1e6 * (marks[1].cpu - marks[0].cpu) / max(s.Events, 1)
	f0, err := jmx.at(ctx, marks[0].at)
	if err != nil {
		return s, err
	}
	f1, err := jmx.at(ctx, marks[1].at)
	if err != nil {
		return s, err
	}
	s.Fetches = (f1 - f0) / window.Seconds()
	return s, nil
}

// fetchWatch is JmxTool of the Apache Kafka distribution reading the
// broker's count of fetch requests every fetchWatchEvery.
type fetchWatch struct {
	cmd     *exec.Cmd
	mu      sync.Mutex
	samples []fetchSample
	done    chan struct{}
}

// fetchSample is one reading of the count.
type fetchSample struct {
	at    time.Time
	count float64
}

// fetchWatchEvery is the interval of the JMX readings.
const fetchWatchEvery = 250 * time.Millisecond

// fetchMetric is the broker's request metric of fetch requests.
const fetchMetric = "kafka.network:type=RequestMetrics,name=RequestsPerSec,request=Fetch"

// watchFetches starts JmxTool against the broker's JMX port, logging to logPath.
func (k *Kafka) watchFetches(ctx context.Context, logPath string) (*fetchWatch, error) {
	log, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	url := fmt.Sprintf("service:jmx:rmi:///jndi/rmi://127.0.0.1:%d/jmxrmi", k.jmxPort)
	cmd := exec.CommandContext(ctx, "java", "-Xmx128m", "-cp", filepath.Join(k.lib, "*"), "org.apache.kafka.tools.JmxTool",
		"--jmx-url", url, "--object-name", fetchMetric, "--attributes", "Count", "--report-format", "csv",
		"--reporting-interval", strconv.Itoa(int(fetchWatchEvery/time.Millisecond)), "--wait")
	out, err := cmd.StdoutPipe()
	if err != nil {
		_ = log.Close()
		return nil, err
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		_ = log.Close()
		return nil, fmt.Errorf("start JmxTool: %w", err)
	}
	w := &fetchWatch{cmd: cmd, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer log.Close()
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			ms, count, ok := parseJmxLine(line)
			if !ok {
				continue
			}
			w.mu.Lock()
			w.samples = append(w.samples, fetchSample{at: time.UnixMilli(ms), count: count})
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// parseJmxLine reads a line of JmxTool's csv report: the time in Unix ms,
// then the count (the header and other lines are not ok).
func parseJmxLine(line string) (ms int64, count float64, ok bool) {
	f := strings.Split(line, ",")
	if len(f) != 2 {
		return 0, 0, false
	}
	ms, err := strconv.ParseInt(strings.Trim(f[0], `"`), 10, 64)
	if err != nil {
		return 0, 0, false
	}
	count, err = strconv.ParseFloat(strings.Trim(f[1], `"`), 64)
	return ms, count, err == nil
}

// at returns the count at t, interpolated between the readings around it;
// it waits up to 10 s for a reading after t.
func (w *fetchWatch) at(ctx context.Context, t time.Time) (float64, error) {
	deadline := time.Now().Add(10 * time.Second)
	for {
		w.mu.Lock()
		var before, after *fetchSample
		for i := range w.samples {
			s := &w.samples[i]
			if !s.at.After(t) {
				before = s
			} else if after == nil {
				after = s
			}
		}
		w.mu.Unlock()
		if before != nil && after != nil {
			f := float64(t.Sub(before.at)) / float64(after.at.Sub(before.at))
			return before.count + f*(after.count-before.count), nil
		}
		select {
		case <-w.done:
			return 0, fmt.Errorf("JmxTool stopped without a reading around %v", t.Format(time.TimeOnly))
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("no JMX reading of fetch requests around %v", t.Format(time.TimeOnly))
		}
	}
}

// stop ends JmxTool.
func (w *fetchWatch) stop() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
	<-w.done
}
