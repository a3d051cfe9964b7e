package dap

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/glassroom/glassroom/kernel"
)

// Client is the Kernel of a kernel client: debug_request on the control
// channel with Request, debug_event from the side stream (Side: the
// caller must not read it otherwise), cells with Execute on goroutines
// of their own.
func Client(c *kernel.Client) Kernel { return &client{c: c} }

type client struct {
	c    *kernel.Client
	side []*kernel.Message // side-stream messages not looked at yet
}

func (d *client) Debug(ctx context.Context, req map[string]any) (json.RawMessage, error) {
	m, err := d.c.Request(ctx, kernel.Control, "debug_request", req)
	if err != nil {
		return nil, err
	}
	return m.Content, nil
}

func (d *client) Event(ctx context.Context) (json.RawMessage, error) {
	for {
		for len(d.side) > 0 {
			m := d.side[0]
			d.side = d.side[1:]
			if m.Header.MsgType == kernel.MsgDebugEvent {
				return m.Content, nil
			}
		}
		var err error
		if d.side, err = d.c.Side(ctx, d.side); err != nil {
			return nil, err
		}
	}
}

func (d *client) Run(code string) <-chan Result {
	done := make(chan Result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 2*Wait)
		defer cancel()
		var out strings.Builder
		rep, err := d.c.Execute(ctx, code, kernel.ExecuteOptions{}, func(ev kernel.Event) {
			if ev.Kind == kernel.EventStream && ev.Name == "stdout" {
				out.WriteString(ev.Text)
			}
		})
		if err == nil && rep.Status != "ok" {
			err = &CellError{Status: rep.Status, EName: rep.EName, EValue: rep.EValue}
		}
		done <- Result{Stdout: out.String(), Err: err}
	}()
	return done
}

// CellError is a cell that ended in an error.
type CellError struct{ Status, EName, EValue string }

func (e *CellError) Error() string { return e.Status + ": " + e.EName + ": " + e.EValue }
