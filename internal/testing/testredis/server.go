package testredis

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// startAttempts is how often a first start is tried with a fresh port when
// the chosen port was taken between choosing it and redis-server binding it.
const startAttempts = 5

// stopTimeout bounds how long Stop waits for a graceful shutdown before it
// falls back to SIGKILL.
const stopTimeout = 15 * time.Second

// Server is one redis-server (or valkey-server) process started by
// StartStandalone or as a node of a Cluster. Its methods are safe for
// concurrent use.
type Server struct {
	cfg     config
	cluster bool
	// sentinelConf is the configuration file of a Sentinel (empty for a
	// data node): the process runs with --sentinel.
	sentinelConf string
	bin          string
	version      string
	dir          string
	logPath      string

	mu     sync.Mutex
	port   int
	cmd    *exec.Cmd
	done   chan struct{} // closed when cmd has exited
	client *redis.Client
}

// StartStandalone starts a standalone redis-server (valkey-server with
// WithValkey) on a free 127.0.0.1 port with its own temporary directory and
// waits until it answers PING. The server and its Client are shut down by
// tb.Cleanup. A missing binary or a failed start fails the test.
func StartStandalone(tb testing.TB, opts ...Option) *Server {
	tb.Helper()
	return startServer(tb, applyOptions(opts), false, 0)
}

// startServer creates and starts one server. port 0 means "choose a free
// port"; a given port is used as is (cluster nodes have pre-checked ports).
func startServer(tb testing.TB, cfg config, cluster bool, port int) *Server {
	tb.Helper()
	return startProcess(tb, cfg, cluster, port, nil)
}

// startProcess creates and starts one server, or a Sentinel when
// sentinelConf is not nil: it writes the Sentinel's configuration file from
// the lines sentinelConf returns for the server's directory.
func startProcess(tb testing.TB, cfg config, cluster bool, port int, sentinelConf func(dir string) []string) *Server {
	tb.Helper()
	bin, err := cfg.flavor.binary()
	if err != nil {
		tb.Fatalf("testredis: %v", err)
	}
	dir := tb.TempDir()
	s := &Server{
		cfg:     cfg,
		cluster: cluster,
		bin:     bin,
		dir:     dir,
		logPath: filepath.Join(dir, "redis.log"),
	}
	// Registered after TempDir, so it runs before the directory is removed.
	tb.Cleanup(s.cleanup)
	if sentinelConf != nil {
		s.sentinelConf = filepath.Join(dir, "sentinel.conf")
		if err := os.WriteFile(s.sentinelConf, []byte(strings.Join(sentinelConf(dir), "\n")+"\n"), 0o644); err != nil {
			tb.Fatalf("testredis: write %s: %v", s.sentinelConf, err)
		}
	}

	for attempt := 1; ; attempt++ {
		if port == 0 || attempt > 1 {
			ports, err := freePorts(1, cluster)
			if err != nil {
				tb.Fatalf("testredis: choose a port: %v", err)
			}
			port = ports[0]
		}
		s.mu.Lock()
		s.port = port
		s.mu.Unlock()
		err := s.launch()
		if err == nil {
			err = s.waitReady()
		}
		if err == nil {
			break
		}
		s.Kill()
		if attempt < startAttempts && strings.Contains(s.logTail(), "Address already in use") {
			continue
		}
		tb.Fatalf("testredis: start %s on %s: %v\nlast lines of %s:\n%s", bin, s.Addr(), err, s.logPath, s.logTail())
	}

	s.mu.Lock()
	opts := &redis.Options{Addr: s.addrLocked(), DisableIdentity: true}
	if s.sentinelConf != "" {
		opts.Password = cfg.sentinelPassword
	}
	s.client = redis.NewClient(opts)
	s.mu.Unlock()
	if s.version, err = serverVersion(context.Background(), s.client, cfg.flavor); err != nil {
		tb.Fatalf("testredis: %s on %s: %v", bin, s.Addr(), err)
	}
	return s
}

// args returns the server's command line for the current port (Valkey takes
// the same arguments as Redis).
func (s *Server) args(port int) []string {
	if s.sentinelConf != "" {
		// The Sentinel rewrites its file (known replicas and Sentinels, the
		// current master); the port is given here so a retry on another
		// port needs no new file.
		return append([]string{s.sentinelConf, "--sentinel", "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
			"--logfile", s.logPath, "--daemonize", "no", "--protected-mode", "no"}, s.cfg.extraArgs...)
	}
	a := []string{
		"--port", strconv.Itoa(port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--logfile", s.logPath,
		"--daemonize", "no",
		"--protected-mode", "no",
		"--save", "",
		// A replica's first sync starts at once (not after the default 5 s
		// wait for more replicas to join).
		"--repl-diskless-sync-delay", "0",
	}
	if s.cfg.aof {
		a = append(a, "--appendonly", "yes", "--appendfsync", "everysec")
	} else {
		a = append(a, "--appendonly", "no")
	}
	if s.cluster {
		a = append(a,
			"--cluster-enabled", "yes",
			"--cluster-config-file", filepath.Join(s.dir, "nodes.conf"),
			"--cluster-node-timeout", "5000",
		)
	}
	return append(a, s.cfg.extraArgs...)
}

// launch starts the process without waiting for it to become ready.
func (s *Server) launch() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	cmd := exec.Command(s.bin, s.args(s.port)...)
	cmd.Dir = s.dir
	cmd.SysProcAttr = sysProcAttr()
	// The server logs to its logfile; anything printed before that (bad
	// arguments) goes to the same file so failure messages can show it.
	out, err := os.OpenFile(s.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open log file: %w", err)
	}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		_ = out.Close()
		return fmt.Errorf("exec %s: %w", s.bin, err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		_ = out.Close()
		close(done)
	}()
	s.cmd, s.done = cmd, done
	return nil
}

// waitReady polls until the server answers PING and has finished loading
// its data, the process exits, or the ready timeout passes.
func (s *Server) waitReady() error {
	s.mu.Lock()
	addr, done, sentinel := s.addrLocked(), s.done, s.sentinelConf != ""
	s.mu.Unlock()
	password := ""
	if sentinel {
		password = s.cfg.sentinelPassword
	}
	probe := redis.NewClient(&redis.Options{
		Addr:            addr,
		Password:        password,
		DialTimeout:     time.Second,
		ReadTimeout:     time.Second,
		WriteTimeout:    time.Second,
		MaxRetries:      -1,
		PoolSize:        1,
		DisableIdentity: true,
	})
	defer probe.Close()
	deadline := time.Now().Add(s.cfg.readyTimeout)
	var lastErr error
	for {
		select {
		case <-done:
			return errors.New("server exited during start-up")
		default:
		}
		if lastErr = probeReady(probe, sentinel); lastErr == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("not ready after %s: %w", s.cfg.readyTimeout, lastErr)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// probeReady reports nil when the server answers PING and is not loading
// (a Sentinel loads no data: PING is enough).
func probeReady(c *redis.Client, sentinel bool) error {
	ctx := context.Background()
	if err := c.Ping(ctx).Err(); err != nil {
		return fmt.Errorf("ping: %w", err)
	}
	if sentinel {
		return nil
	}
	info, err := c.Info(ctx, "persistence").Result()
	if err != nil {
		return fmt.Errorf("info persistence: %w", err)
	}
	if !strings.Contains(info, "loading:0") {
		return errors.New("still loading data")
	}
	return nil
}

// Addr returns the server's address, "127.0.0.1:<port>".
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.addrLocked()
}

func (s *Server) addrLocked() string {
	return "127.0.0.1:" + strconv.Itoa(s.port)
}

// Flavor returns the server's implementation (Redis or Valkey).
func (s *Server) Flavor() Flavor { return s.cfg.flavor }

// Version returns the server's own version from INFO server at start:
// redis_version for Redis ("7.0.15"), valkey_version for Valkey ("8.1.8").
func (s *Server) Version() string { return s.version }

// Dir returns the server's data directory (also holding redis.log and, for
// cluster nodes, nodes.conf).
func (s *Server) Dir() string { return s.dir }

// Client returns a go-redis client for this server. It survives Stop and
// Restart (it reconnects) and is closed at cleanup.
func (s *Server) Client() *redis.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.client
}

// running returns the live process and its exit channel, or nil when the
// server is not running.
func (s *Server) running() (*exec.Cmd, chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return nil, nil
	}
	select {
	case <-s.done:
		return nil, nil
	default:
		return s.cmd, s.done
	}
}

// signal sends sig to the process (group when group is set); errors from a
// process that has just exited are ignored.
func signal(cmd *exec.Cmd, sig syscall.Signal, group bool) {
	pid := cmd.Process.Pid
	if group {
		pid = -pid
	}
	_ = syscall.Kill(pid, sig)
}

// Stop shuts the server down gracefully (SIGTERM, which also flushes the
// AOF) and waits for the process to exit. A paused server is resumed so it
// can handle the signal; after 15s without exit it is killed. Stopping a
// stopped server does nothing.
func (s *Server) Stop() {
	cmd, done := s.running()
	if cmd == nil {
		return
	}
	signal(cmd, syscall.SIGTERM, false)
	signal(cmd, syscall.SIGCONT, true)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		s.Kill()
	}
}

// Kill sends SIGKILL to the server (and any child it forked) and waits for
// the process to exit: data not yet written to the AOF is lost, as in a
// crash. Killing a stopped server does nothing.
func (s *Server) Kill() {
	cmd, done := s.running()
	if cmd == nil {
		return
	}
	signal(cmd, syscall.SIGKILL, true)
	<-done
}

// Pause freezes the server with SIGSTOP: connections stay open but nothing
// is answered until Resume.
func (s *Server) Pause() {
	if cmd, _ := s.running(); cmd != nil {
		signal(cmd, syscall.SIGSTOP, true)
	}
}

// Resume continues a paused server with SIGCONT.
func (s *Server) Resume() {
	if cmd, _ := s.running(); cmd != nil {
		signal(cmd, syscall.SIGCONT, true)
	}
}

// Restart starts the server again on the same port and directory (so an
// AOF or a cluster node's nodes.conf is reloaded) and waits until it is
// ready. A running server is stopped gracefully first. Failure fails tb.
func (s *Server) Restart(tb testing.TB) {
	tb.Helper()
	s.Stop()
	err := s.launch()
	if err == nil {
		err = s.waitReady()
	}
	if err != nil {
		s.Kill()
		tb.Fatalf("testredis: restart %s on %s: %v\nlast lines of %s:\n%s", s.bin, s.Addr(), err, s.logPath, s.logTail())
	}
}

// cleanup closes the client and kills the process; it runs at test end.
func (s *Server) cleanup() {
	s.mu.Lock()
	c := s.client
	s.mu.Unlock()
	if c != nil {
		_ = c.Close()
	}
	s.Kill()
}

// logTail returns the last lines of the server's log file.
func (s *Server) logTail() string {
	data, err := os.ReadFile(s.logPath)
	if err != nil {
		return fmt.Sprintf("(no log: %v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > 20 {
		lines = lines[len(lines)-20:]
	}
	return strings.Join(lines, "\n")
}
