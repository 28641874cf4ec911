package config

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// loadWith writes file (when not empty) to a temporary config file named by
// --config, registers the flags on a fresh FlagSet, parses args and loads.
func loadWith(t *testing.T, file string, env []string, args ...string) (Config, error) {
	t.Helper()
	if file != "" {
		path := writeFile(t, file)
		args = append([]string{"--config", path}, args...)
	}
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fl := Register(fs)
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	return Load(fl, env)
}

// writeFile writes a YAML file into a temporary directory and returns its path.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// mustLoad fails the test on a load error.
func mustLoad(t *testing.T, file string, env []string, args ...string) Config {
	t.Helper()
	c, err := loadWith(t, file, env, args...)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	return c
}

// assertKeyError checks that err is a *KeyError for key, exits 2 and is one line.
func assertKeyError(t *testing.T, err error, key string) *KeyError {
	t.Helper()
	if err == nil {
		t.Fatalf("want an error naming %s, got none", key)
	}
	var ke *KeyError
	if !errors.As(err, &ke) {
		t.Fatalf("want *KeyError naming %s, got %T: %v", key, err, err)
	}
	if ke.Key != key {
		t.Fatalf("error names key %q, want %q (%v)", ke.Key, key, err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\r\n") {
		t.Fatalf("message is not one line: %q", msg)
	}
	if !strings.HasPrefix(msg, "config: "+key+": ") {
		t.Fatalf("message %q does not start with config: %s:", msg, key)
	}
	if got := ExitCode(err); got != 2 {
		t.Fatalf("ExitCode = %d, want 2 (%v)", got, err)
	}
	return ke
}

// keyValue returns the value of a dotted key in c.
func keyValue(t *testing.T, c Config, key string) any {
	t.Helper()
	f, ok := newSchema().byKey[key]
	if !ok {
		t.Fatalf("no key %s", key)
	}
	return f.get(&c)
}
