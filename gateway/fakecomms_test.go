package gateway_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/glassroom/glassroom/api"
	"github.com/glassroom/glassroom/kernel"
	"github.com/glassroom/glassroom/sessions"
)

// TestCommsOfAContextOnTheFake (short tier): comms work in every context.
// A comm the kernel of another context opens is framed with that
// context; a client's comm_msg to it goes to that context's kernel, not
// the first's.
func TestCommsOfAContextOnTheFake(t *testing.T) {
	t.Parallel()
	base, rt := fakeGateway(t, sessions.Config{})
	id := createFakeSession(t, base)
	req, _ := http.NewRequest(http.MethodPost, base+"/v1/sessions/"+id+"/contexts", strings.NewReader(`{"language":"r"}`))
	req.Header.Set("Authorization", "Bearer "+fakeKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var ctx api.Context
	err = json.NewDecoder(resp.Body).Decode(&ctx)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || ctx.ID == "" {
		t.Fatalf("create context: HTTP %d, %+v, %v", resp.StatusCode, ctx, err)
	}
	kernels := rt.Kernels()
	if len(kernels) != 2 {
		t.Fatalf("%d fake kernels, want the first and the context's", len(kernels))
	}
	c := dialFrames(t, base, id)
	c.next() // the kernel's state

	kernels[1].Emit(&kernel.Message{Header: kernel.Header{MsgID: "o1", MsgType: kernel.MsgCommOpen},
		Content: json.RawMessage(`{"comm_id":"rc","target_name":"jupyter.widget","data":{}}`)})
	for {
		f := c.next()
		if m, ok := f.Frame.(api.CommEvent); ok {
			if m.Context != ctx.ID || m.Msg.Header.MsgType != kernel.MsgCommOpen {
				t.Fatalf("the context's comm_open framed %s, want context %s", f.Raw, ctx.ID)
			}
			break
		}
	}

	c.send(api.CommFrame{Type: api.FrameComm, ID: "m1", MsgType: kernel.MsgCommMsg, Content: json.RawMessage(`{"comm_id":"rc","data":{"x":1}}`)})
	for {
		f := c.next()
		if r, ok := f.Frame.(api.RejectedFrame); ok {
			t.Fatalf("comm_msg to the context's comm rejected: %+v", r)
		}
		if s, ok := f.Frame.(api.CommSentFrame); ok && s.ID == "m1" {
			break
		}
	}
	sent := kernels[1].SentMessages()
	if len(sent) == 0 || sent[len(sent)-1].Header.MsgType != kernel.MsgCommMsg || !strings.Contains(string(sent[len(sent)-1].Content), `"rc"`) {
		t.Fatalf("the context's kernel was sent %v, want the comm_msg to rc", sent)
	}
	if n := len(kernels[0].SentMessages()); n != 0 {
		t.Fatalf("the first kernel was sent %d messages", n)
	}
}
