package obs

import (
	"fmt"
	"os"
	"strings"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// Log formats accepted by NewLogger.
const (
	// FormatAuto selects FormatConsole on a terminal and FormatJSON otherwise.
	FormatAuto = "auto"
	// FormatJSON is zap's production JSON encoding with ISO8601 times.
	FormatJSON = "json"
	// FormatConsole is zap's human-readable console encoding.
	FormatConsole = "console"
)

// NewLogger builds the process logger writing to stderr. level is one of
// debug, info, warn, error; format is auto, json or console, where auto means
// console when stderrIsTerminal and json otherwise. Times are ISO8601; like
// zap's production logger it adds the caller, stack traces from error level
// and samples repeated messages (first 100 per second, then every 100th).
func NewLogger(level, format string, stderrIsTerminal bool) (*zap.Logger, error) {
	return newLogger(level, format, stderrIsTerminal, zapcore.Lock(os.Stderr))
}

// newLogger is NewLogger with a chosen output, for tests.
func newLogger(level, format string, terminal bool, out zapcore.WriteSyncer) (*zap.Logger, error) {
	lvl, err := parseLevel(level)
	if err != nil {
		return nil, err
	}
	enc, err := newEncoder(format, terminal)
	if err != nil {
		return nil, err
	}
	core := zapcore.NewCore(enc, out, lvl)
	core = zapcore.NewSamplerWithOptions(core, 1e9, 100, 100)
	return zap.New(core,
		zap.AddCaller(),
		zap.AddStacktrace(zapcore.ErrorLevel),
		zap.ErrorOutput(zapcore.Lock(os.Stderr)),
	), nil
}

// parseLevel accepts exactly the levels the configuration documents.
func parseLevel(level string) (zapcore.Level, error) {
	switch strings.ToLower(strings.TrimSpace(level)) {
	case "debug":
		return zapcore.DebugLevel, nil
	case "info":
		return zapcore.InfoLevel, nil
	case "warn":
		return zapcore.WarnLevel, nil
	case "error":
		return zapcore.ErrorLevel, nil
	}
	return 0, fmt.Errorf("log.level: unknown level %q (want debug, info, warn or error)", level)
}

// newEncoder returns the encoder for format; see NewLogger.
func newEncoder(format string, terminal bool) (zapcore.Encoder, error) {
	f := strings.ToLower(strings.TrimSpace(format))
	if f == FormatAuto {
		f = FormatJSON
		if terminal {
			f = FormatConsole
		}
	}
	cfg := zap.NewProductionEncoderConfig()
	cfg.EncodeTime = zapcore.ISO8601TimeEncoder
	switch f {
	case FormatJSON:
		return zapcore.NewJSONEncoder(cfg), nil
	case FormatConsole:
		cfg.EncodeLevel = zapcore.CapitalLevelEncoder
		if terminal {
			cfg.EncodeLevel = zapcore.CapitalColorLevelEncoder
		}
		return zapcore.NewConsoleEncoder(cfg), nil
	}
	return nil, fmt.Errorf("log.format: unknown format %q (want auto, json or console)", format)
}

// IsTerminal reports whether f is a character device (a terminal), which
// is how NewLogger's caller decides the auto format.
func IsTerminal(f *os.File) bool {
	if f == nil {
		return false
	}
	st, err := f.Stat()
	if err != nil {
		return false
	}
	return st.Mode()&os.ModeCharDevice != 0
}
