package mcp

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/glassroom/glassroom/client"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// ansi matches terminal escape sequences: CSI (colours, cursor moves),
// OSC (titles, links) and two-byte escapes.
var ansi = regexp.MustCompile(`\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]`)

func stripANSI(s string) string {
	if !strings.Contains(s, "\x1b") {
		return s
	}
	return ansi.ReplaceAllString(s, "")
}

// section is one part of a tool result's text. Fixed sections are never
// cut; the others share what is left of the character budget.
type section struct {
	header string
	body   string
	fixed  bool
}

// rasterTypes are returned as MCP image content, in order of preference.
var rasterTypes = []string{"image/png", "image/jpeg", "image/gif", "image/webp"}

// formatExecution renders an execution for a model: one text content with
// the output in order (stdout, stderr, displays, result, error, status),
// then one image content per image output, all within cfg's caps.
func formatExecution(x *client.Execution, note string, cfg Config) *sdk.CallToolResult {
	var secs []section
	var images []sdk.Content
	imageBytes, skipped := 0, 0
	if note != "" {
		secs = append(secs, section{body: note, fixed: true})
	}
	addStream := func(name, text string) {
		if n := len(secs); n > 0 && secs[n-1].header == name+":" {
			secs[n-1].body += text
			return
		}
		secs = append(secs, section{header: name + ":", body: text})
	}
	addBundle := func(header string, data client.Bundle) {
		for _, mime := range rasterTypes {
			if !data.Has(mime) {
				continue
			}
			raw, err := data.Binary(mime)
			switch {
			case err != nil:
				secs = append(secs, section{header: header, body: fmt.Sprintf("[%s output could not be decoded]", mime), fixed: true})
			case len(images) >= cfg.MaxImages || len(raw) > cfg.MaxImageBytes || imageBytes+len(raw) > cfg.MaxTotalImageBytes:
				skipped++
				secs = append(secs, section{header: header, body: fmt.Sprintf("[%s image of %s not returned: over this tool's image limits (%d images, %s each, %s in all); save it to a file instead]",
					mime, humanBytes(int64(len(raw))), cfg.MaxImages, humanBytes(int64(cfg.MaxImageBytes)), humanBytes(int64(cfg.MaxTotalImageBytes))), fixed: true})
			default:
				imageBytes += len(raw)
				images = append(images, &sdk.ImageContent{Data: raw, MIMEType: mime})
				secs = append(secs, section{header: header, body: fmt.Sprintf("[image %d: %s, %s, attached]", len(images), mime, humanBytes(int64(len(raw)))), fixed: true})
			}
			return
		}
		switch {
		case data.Has("text/plain"):
			secs = append(secs, section{header: header, body: data.Text("text/plain")})
		case data.Has("text/markdown"):
			secs = append(secs, section{header: header, body: data.Text("text/markdown")})
		case data.Has("text/html"):
			secs = append(secs, section{header: header + " (text/html)", body: data.Text("text/html")})
		default:
			secs = append(secs, section{header: header, body: "[output of type " + strings.Join(data.MIMETypes(), ", ") + " not shown]", fixed: true})
		}
	}
	for _, ev := range x.Outputs {
		switch ev.Type {
		case client.EventStream:
			addStream(ev.Name, ev.Text)
		case client.EventDisplay, client.EventUpdateDisplay:
			addBundle("display:", ev.Data)
		case client.EventResult:
			addBundle(fmt.Sprintf("result (Out[%d]):", ev.ExecutionCount), ev.Data)
		case client.EventClearOutput:
			// What a notebook would show: the output before this is gone.
			kept := secs[:0]
			for _, s := range secs {
				if s.header == "" {
					kept = append(kept, s)
				}
			}
			secs = append(kept, section{body: "[earlier output was cleared by clear_output()]", fixed: true})
			images, imageBytes = nil, 0
		case client.EventError:
			tb := strings.Join(ev.Traceback, "\n")
			if strings.TrimSpace(tb) == "" {
				tb = ev.Name + ": " + ev.Value
			}
			secs = append(secs, section{header: "error: " + ev.Name + ": " + ev.Value, body: tb})
		}
	}
	if len(x.Outputs) == 0 && (x.Stdout != "" || x.Stderr != "") { // a backend that reports no events
		if x.Stdout != "" {
			addStream("stdout", x.Stdout)
		}
		if x.Stderr != "" {
			addStream("stderr", x.Stderr)
		}
	}
	secs = append(secs, section{body: statusLine(x), fixed: true})
	if len(x.Files) > 0 {
		var b strings.Builder
		for i, f := range x.Files {
			if i == 20 {
				fmt.Fprintf(&b, "\n… and %d more", len(x.Files)-i)
				break
			}
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "%s (%s, %s)", f.Path, f.Change, humanBytes(f.Size))
		}
		secs = append(secs, section{header: "workspace files changed:", body: b.String(), fixed: true})
	}
	text := render(secs, cfg.MaxTextChars)
	content := append([]sdk.Content{&sdk.TextContent{Text: text}}, images...)
	return &sdk.CallToolResult{Content: content, IsError: x.Status != client.StatusOK}
}

func statusLine(x *client.Execution) string {
	s := fmt.Sprintf("status: %s (execution %d, %d ms)", x.Status, x.ExecutionCount, x.DurationMS)
	switch x.Status {
	case client.StatusTimeout:
		s += "; the code ran past its timeout and was interrupted (pass a larger timeout_s if it needs longer)"
	case client.StatusInterrupted:
		s += "; the code was interrupted"
	case client.StatusDied:
		s += "; the kernel died (often: out of memory) and was restarted"
	}
	if x.Reason != "" {
		s += "; reason: " + x.Reason
	}
	if x.StateLost {
		s += "; variables were lost: re-run earlier code (files are kept)"
	}
	if x.Truncated {
		s += "; the gateway dropped output past its caps"
	}
	return s
}

// render joins sections, cutting the non-fixed bodies (head and tail kept)
// so the whole fits about limit characters.
func render(secs []section, limit int) string {
	budget := limit
	var cut []int
	for i := range secs {
		secs[i].body = stripANSI(secs[i].body)
		budget -= utf8.RuneCountInString(secs[i].header) + 1
		if secs[i].fixed {
			budget -= utf8.RuneCountInString(secs[i].body) + 1
		} else {
			cut = append(cut, i)
			budget -= 64 // room for a truncation note
		}
	}
	// Water-filling: small bodies keep everything, large ones share the rest.
	sort.Slice(cut, func(a, b int) bool {
		return utf8.RuneCountInString(secs[cut[a]].body) < utf8.RuneCountInString(secs[cut[b]].body)
	})
	for n, i := range cut {
		share := budget / (len(cut) - n)
		if share < 200 {
			share = 200
		}
		secs[i].body = clipMiddle(secs[i].body, share)
		budget -= utf8.RuneCountInString(secs[i].body)
	}
	var b strings.Builder
	for _, s := range secs {
		if b.Len() > 0 {
			b.WriteString("\n")
		}
		if s.header != "" {
			b.WriteString(s.header)
			b.WriteString("\n")
		}
		b.WriteString(strings.TrimRight(s.body, "\n"))
	}
	out, more := clipHead(b.String(), limit)
	if more > 0 {
		out += fmt.Sprintf("\n[output truncated: %d more characters]", more)
	}
	return out
}

// clipMiddle keeps the first two thirds and the last third of n characters
// of s, with a note in between saying how many were cut.
func clipMiddle(s string, n int) string {
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s
	}
	r := []rune(s)
	head := n * 2 / 3
	tail := n - head
	return string(r[:head]) + fmt.Sprintf("\n[output truncated: %d more characters]\n", total-n) + string(r[total-tail:])
}

// clipHead keeps the first n characters of s and says how many it dropped.
func clipHead(s string, n int) (string, int) {
	if n < 0 {
		n = 0
	}
	total := utf8.RuneCountInString(s)
	if total <= n {
		return s, 0
	}
	return string([]rune(s)[:n]), total - n
}

func humanBytes(n int64) string {
	switch {
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1<<20:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	case n < 1<<30:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
}
