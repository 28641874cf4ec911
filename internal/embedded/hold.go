package embedded

import (
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

// holdLog keeps the lines of a logger back until Release, so that the
// demo's banner, which needs the HTTP address the consumer binds first,
// comes before the consumer's start-up lines.
type holdLog struct {
	mu      sync.Mutex
	holding bool
	held    []heldEntry
}

// heldEntry is one line kept back, with the core that writes it.
type heldEntry struct {
	core   zapcore.Core
	ent    zapcore.Entry
	fields []zapcore.Field
}

// newHoldLog returns a holdLog that holds until Release.
func newHoldLog() *holdLog { return &holdLog{holding: true} }

// Logger returns log whose lines h holds.
func (h *holdLog) Logger(log *zap.Logger) *zap.Logger {
	return log.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core { return &holdCore{Core: c, h: h} }))
}

// Release writes the lines held so far, in order, and stops holding. It
// may be called more than once.
func (h *holdLog) Release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, e := range h.held {
		_ = e.core.Write(e.ent, e.fields)
	}
	h.held, h.holding = nil, false
}

// holdCore is a core whose writes h holds while it holds.
type holdCore struct {
	zapcore.Core
	h *holdLog
}

func (c *holdCore) With(fields []zapcore.Field) zapcore.Core {
	return &holdCore{Core: c.Core.With(fields), h: c.h}
}

func (c *holdCore) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(ent.Level) {
		return ce.AddCore(ent, c)
	}
	return ce
}

func (c *holdCore) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	c.h.mu.Lock()
	defer c.h.mu.Unlock()
	if c.h.holding {
		c.h.held = append(c.h.held, heldEntry{core: c.Core, ent: ent, fields: append([]zapcore.Field(nil), fields...)})
		return nil
	}
	return c.Core.Write(ent, fields)
}
