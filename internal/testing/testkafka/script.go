package testkafka

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// scriptPath is the start script's path relative to the repository root.
const scriptPath = "scripts/testenv/kafka.sh"

// kafkaMain is the broker's main class, as it appears on the JVM's command
// line.
const kafkaMain = "kafka.Kafka"

// Ports are chosen in [portLow, portHigh), below Linux's default ephemeral
// range (32768-60999), so outgoing connections of concurrently running tests
// do not take them between choosing and binding.
const (
	portLow  = 20000
	portHigh = 32000
)

// formatAllowance is added to the start timeout to bound a script run: it
// covers storage formatting (a JVM start per node) before the wait.
const formatAllowance = 60 * time.Second

// findScript returns the absolute path of scripts/testenv/kafka.sh, found by
// walking up from the working directory (a test's package directory) to the
// directory holding go.mod.
func findScript() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("get working directory: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			p := filepath.Join(dir, filepath.FromSlash(scriptPath))
			if _, err := os.Stat(p); err != nil {
				return "", fmt.Errorf("module root %s has no %s: %w", dir, scriptPath, err)
			}
			return p, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or above it", wd)
		}
		dir = parent
	}
}

// runScript runs `bash kafka.sh args...` and returns its combined output.
// timeout bounds the whole run.
func runScript(script string, timeout time.Duration, args ...string) (string, error) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		return "", fmt.Errorf("bash not found on PATH: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, append([]string{script}, args...)...)
	cmd.SysProcAttr = scriptProcAttr()
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("%s %s: killed after %s", scriptPath, args[0], timeout)
	}
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w", scriptPath, args[0], err)
	}
	return string(out), nil
}

// portInUse reports whether a failed start's output says a port was taken.
func portInUse(out string) bool {
	return strings.Contains(out, "Address already in use")
}

// freeRange returns the first of n consecutive free loopback ports in
// [portLow, portHigh). The ports are checked by listening on them; all
// listeners are closed before it returns.
func freeRange(n int) (int, error) {
	for attempt := 0; attempt < 200; attempt++ {
		base := portLow + rand.IntN(portHigh-portLow-n)
		if err := allFree(base, n); err == nil {
			return base, nil
		}
	}
	return 0, errors.New("no free range of loopback ports found after 200 attempts")
}

// allFree returns nil when ports base..base+n-1 can all be bound on
// 127.0.0.1.
func allFree(base, n int) error {
	var held []net.Listener
	defer func() {
		for _, l := range held {
			_ = l.Close()
		}
	}()
	for p := base; p < base+n; p++ {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p))
		if err != nil {
			return fmt.Errorf("listen on 127.0.0.1:%d: %w", p, err)
		}
		held = append(held, l)
	}
	return nil
}
