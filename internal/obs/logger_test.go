package obs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// logOnce logs one info and one debug line with the given settings and
// returns the output.
func logOnce(t *testing.T, level, format string, terminal bool) string {
	t.Helper()
	var buf bytes.Buffer
	log, err := newLogger(level, format, terminal, zapcore.AddSync(&buf))
	if err != nil {
		t.Fatalf("newLogger(%q, %q, %v): %v", level, format, terminal, err)
	}
	log.Debug("debug line")
	log.Info("hello", zap.String("k", "v"))
	_ = log.Sync()
	return buf.String()
}

func TestLoggerFormatSelection(t *testing.T) {
	cases := []struct {
		format   string
		terminal bool
		wantJSON bool
	}{
		{"auto", false, true},
		{"auto", true, false},
		{"json", true, true},
		{"json", false, true},
		{"console", false, false},
		{"console", true, false},
	}
	for _, c := range cases {
		out := logOnce(t, "info", c.format, c.terminal)
		var rec map[string]any
		isJSON := json.Unmarshal([]byte(strings.TrimSpace(out)), &rec) == nil
		if isJSON != c.wantJSON {
			t.Errorf("format %q terminal %v: JSON = %v, want %v; output %q", c.format, c.terminal, isJSON, c.wantJSON, out)
			continue
		}
		if !strings.Contains(out, "hello") {
			t.Errorf("format %q terminal %v: message missing in %q", c.format, c.terminal, out)
		}
		if isJSON {
			ts, _ := rec["ts"].(string)
			if len(ts) < 20 || ts[4] != '-' || ts[10] != 'T' {
				t.Errorf("json ts = %v, want an ISO8601 string", rec["ts"])
			}
			if rec["level"] != "info" || rec["k"] != "v" || rec["msg"] != "hello" {
				t.Errorf("json record = %v", rec)
			}
		}
	}
}

func TestLoggerLevels(t *testing.T) {
	if out := logOnce(t, "debug", "json", false); !strings.Contains(out, "debug line") {
		t.Errorf("level debug dropped debug line: %q", out)
	}
	if out := logOnce(t, "info", "json", false); strings.Contains(out, "debug line") {
		t.Errorf("level info kept debug line: %q", out)
	}
	if out := logOnce(t, "warn", "json", false); out != "" {
		t.Errorf("level warn kept info line: %q", out)
	}
	for _, lvl := range []string{"error", "warn", "info", "debug"} {
		if _, err := NewLogger(lvl, "auto", false); err != nil {
			t.Errorf("NewLogger(%q): %v", lvl, err)
		}
	}
}

func TestLoggerRejectsBadSettings(t *testing.T) {
	if _, err := NewLogger("verbose", "json", false); err == nil || !strings.Contains(err.Error(), "log.level") {
		t.Errorf("bad level: err = %v, want one naming log.level", err)
	}
	if _, err := NewLogger("info", "xml", false); err == nil || !strings.Contains(err.Error(), "log.format") {
		t.Errorf("bad format: err = %v, want one naming log.format", err)
	}
}

func TestIsTerminal(t *testing.T) {
	f, err := os.Create(filepath.Join(t.TempDir(), "plain"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if IsTerminal(f) {
		t.Error("IsTerminal(regular file) = true")
	}
	if IsTerminal(nil) {
		t.Error("IsTerminal(nil) = true")
	}
}
