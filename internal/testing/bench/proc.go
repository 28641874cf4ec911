package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Build compiles the package pkg (e.g. ./cmd/consumer) of the repository at
// repo into dir and returns the binary's path.
func Build(ctx context.Context, repo, pkg, dir string) (string, error) {
	out := filepath.Join(dir, filepath.Base(pkg))
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = repo
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("go build %s: %w", pkg, err)
	}
	return out, nil
}

// Proc is a running child process (consumer or replayer) with its output in a log file.
type Proc struct {
	cmd     *exec.Cmd
	done    chan struct{}
	LogPath string
	// MetricsURL is http://<addr>/metrics when the process serves metrics.
	MetricsURL string
}

// Env returns the PROJECTOR_* environment for a consumer or replayer using
// brokers and Redis r (through its Sentinels when it has them), serving
// HTTP on httpAddr, plus extra "K=V" entries.
func Env(brokers string, r *Redis, httpAddr string, extra ...string) []string {
	addrs := r.Addrs()
	if len(r.Sentinels()) > 0 {
		addrs = r.Sentinels()
	}
	env := append(os.Environ(),
		"PROJECTOR_KAFKA_BROKERS="+brokers,
		"PROJECTOR_REDIS_ADDRS="+strings.Join(addrs, ","),
		"PROJECTOR_HTTP_ADDR="+httpAddr,
		"PROJECTOR_LOG_LEVEL=warn",
		"PROJECTOR_LOG_FORMAT=json",
	)
	switch {
	case r.Cluster:
		env = append(env, "PROJECTOR_REDIS_MODE=cluster")
	case len(r.Sentinels()) > 0:
		env = append(env, "PROJECTOR_REDIS_MODE=sentinel", "PROJECTOR_REDIS_SENTINEL_MASTER_NAME="+SentinelMaster)
	}
	return append(env, extra...)
}

// Start runs bin with args and env, its output going to logPath.
func Start(bin string, args, env []string, logPath string) (*Proc, error) {
	f, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", logPath, err)
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	cmd.Stdout, cmd.Stderr = f, f
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	p := &Proc{cmd: cmd, done: make(chan struct{}), LogPath: logPath}
	go func() {
		_ = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// Done is closed when the process has exited.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Stop sends SIGTERM and waits up to 30s, then kills the process.
func (p *Proc) Stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// PeakRSS returns the most memory the process held (bytes), once it has exited.
func (p *Proc) PeakRSS() int64 {
	select {
	case <-p.done:
		if ru, ok := p.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			return ru.Maxrss << 10 // KiB on Linux
		}
	default:
	}
	return 0
}

// CPUSeconds returns the process's user+system CPU time so far (from
// /proc/<pid>/stat while it runs, from its rusage once it has exited).
func (p *Proc) CPUSeconds() (float64, error) {
	select {
	case <-p.done:
		st := p.cmd.ProcessState
		return (st.UserTime() + st.SystemTime()).Seconds(), nil
	default:
	}
	return pidCPUSeconds(p.cmd.Process.Pid)
}

// pidCPUSeconds returns the user+system CPU time of a running process.
func pidCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("read process stat: %w", err)
	}
	// Fields after the parenthesised command name; utime and stime are fields 14 and 15.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(f) < 13 {
		return 0, fmt.Errorf("short /proc stat: %q", s)
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("parse /proc stat: %q", s)
	}
	return (ut + st) / clockTicks, nil
}

// clockTicks is USER_HZ, the unit of /proc/stat and /proc/<pid>/stat times on Linux.
const clockTicks = 100

// Metric sums the samples of a Prometheus metric family (every label set)
// from the process's /metrics; labelMatch, when not empty, must occur in the labels.
func (p *Proc) Metric(ctx context.Context, name, labelMatch string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.MetricsURL, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, fmt.Errorf("scrape metrics: %w", err)
	}
	defer resp.Body.Close()
	return sumMetric(resp.Body, name, labelMatch)
}

// sumMetric sums the samples of metric name in a Prometheus text exposition.
func sumMetric(r io.Reader, name, labelMatch string) (float64, error) {
	var total float64
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		if labelMatch != "" && !strings.Contains(rest, labelMatch) {
			continue
		}
		v, err := strconv.ParseFloat(rest[strings.LastIndexByte(rest, ' ')+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metric line %q: %w", line, err)
		}
		total += v
	}
	return total, sc.Err()
}

// Fetch GETs url into path (a pprof profile, say).
func Fetch(ctx context.Context, url, path string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("get %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("get %s: %s", url, resp.Status)
	}
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.Copy(f, resp.Body)
	return err
}
