package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// browser drives one page of a headless Chromium through the Chrome
// DevTools Protocol over --remote-debugging-pipe: Chromium reads commands
// on its file descriptor 3 and writes answers and events on 4, each a JSON
// message ended by a NUL byte. It types into the page as a user would
// (Input.insertText, Input.dispatchKeyEvent), which --dump-dom cannot.
type browser struct {
	t       *testing.T
	cmd     *exec.Cmd
	in      *os.File
	out     *bufio.Reader
	stderr  *lockedBuilder
	id      int
	session string
}

// lockedBuilder is a strings.Builder safe for the process's output copier.
type lockedBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuilder) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuilder) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startBrowser starts headless Chromium with a blank page and attaches to
// it; the browser is closed and waited for when the test ends.
func startBrowser(t *testing.T) *browser {
	t.Helper()
	if _, err := os.Stat(chromiumBin); err != nil {
		t.Fatalf("%s is missing (install Debian's chromium package: apt-get install chromium): %v", chromiumBin, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmdR, cmdW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	b := &browser{t: t, in: cmdW, out: bufio.NewReader(outR), stderr: &lockedBuilder{}}
	b.cmd = exec.CommandContext(ctx, chromiumBin, "--headless", "--no-sandbox", "--disable-gpu", "--remote-debugging-pipe",
		"--window-size=1280,1600", "--user-data-dir="+t.TempDir(), "--no-first-run", "--disable-extensions",
		"--disable-dev-shm-usage", "about:blank")
	b.cmd.ExtraFiles = []*os.File{cmdR, outW} // descriptors 3 and 4
	b.cmd.Stderr = b.stderr
	if err := b.cmd.Start(); err != nil {
		cancel()
		t.Fatalf("start chromium: %v", err)
	}
	_ = cmdR.Close()
	_ = outW.Close()
	t.Cleanup(func() {
		_ = b.send("", "Browser.close", nil)
		done := make(chan struct{})
		go func() { _ = b.cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = b.cmd.Process.Kill()
			<-done
		}
		cancel()
		_ = cmdW.Close()
		_ = outR.Close()
	})
	var target struct {
		TargetID string `json:"targetId"`
	}
	b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}, &target)
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}, &attached)
	b.session = attached.SessionID
	return b
}

// send writes one command and returns its id's write error.
func (b *browser) send(session, method string, params any) error {
	b.id++
	msg := map[string]any{"id": b.id, "method": method, "params": params}
	if params == nil {
		msg["params"] = map[string]any{}
	}
	if session != "" {
		msg["sessionId"] = session
	}
	raw, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode %s: %w", method, err)
	}
	if _, err := b.in.Write(append(raw, 0)); err != nil {
		return fmt.Errorf("send %s: %w", method, err)
	}
	return nil
}

// call runs method in session ("" for the browser) and decodes its result
// into result (may be nil); events read meanwhile are dropped.
func (b *browser) call(session, method string, params, result any) {
	b.t.Helper()
	if err := b.send(session, method, params); err != nil {
		b.t.Fatalf("%v\nchromium stderr:\n%s", err, b.stderr)
	}
	for {
		raw, err := b.out.ReadBytes(0)
		if err != nil {
			b.t.Fatalf("read the answer to %s: %v\nchromium stderr:\n%s", method, err, b.stderr)
		}
		var msg struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(raw[:len(raw)-1], &msg); err != nil {
			b.t.Fatalf("answer to %s: %v: %s", method, err, raw)
		}
		if msg.ID != b.id {
			continue // an event
		}
		if msg.Error != nil {
			b.t.Fatalf("%s: %s", method, msg.Error.Message)
		}
		if result != nil {
			if err := json.Unmarshal(msg.Result, result); err != nil {
				b.t.Fatalf("decode the result of %s: %v: %s", method, err, msg.Result)
			}
		}
		return
	}
}

// eval evaluates a JavaScript expression in the page and decodes its value
// into v (may be nil).
func (b *browser) eval(expr string, v any) {
	b.t.Helper()
	var res struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	b.call(b.session, "Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}, &res)
	if e := res.ExceptionDetails; e != nil {
		b.t.Fatalf("evaluate %s: %s %s", expr, e.Text, e.Exception.Description)
	}
	if v != nil {
		if err := json.Unmarshal(res.Result.Value, v); err != nil {
			b.t.Fatalf("evaluate %s: %v: %s", expr, err, res.Result.Value)
		}
	}
}

// waitFor evaluates expr until it is true, failing the test after 30s.
func (b *browser) waitFor(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var ok bool
		b.eval("Boolean("+expr+")", &ok)
		if ok {
			return
		}
		if time.Now().After(deadline) {
			var body string
			b.eval("document.body.outerHTML", &body)
			b.t.Fatalf("waited 30s for %s; page:\n%s", expr, body)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// open loads url and waits for the dashboard's first refresh.
func (b *browser) open(url string) {
	b.t.Helper()
	b.call(b.session, "Page.navigate", map[string]any{"url": url}, nil)
	b.waitFor(`document.body && document.body.dataset.loaded === "true"`)
}

// typeInto empties the input matching selector, types text into it and
// presses Enter, which submits its form.
func (b *browser) typeInto(selector, text string) {
	b.t.Helper()
	sel, _ := json.Marshal(selector)
	b.eval(fmt.Sprintf(`(() => { const e = document.querySelector(%s); e.value = ""; e.focus(); return true })()`, sel), nil)
	b.call(b.session, "Input.insertText", map[string]any{"text": text}, nil)
	for _, typ := range []string{"keyDown", "keyUp"} {
		key := map[string]any{"type": typ, "key": "Enter", "code": "Enter", "windowsVirtualKeyCode": 13}
		if typ == "keyDown" {
			key["text"] = "\r"
		}
		b.call(b.session, "Input.dispatchKeyEvent", key, nil)
	}
}
