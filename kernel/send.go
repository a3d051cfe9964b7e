package kernel

import (
	"encoding/json"
	"fmt"

	"github.com/go-zeromq/zmq4"
)

// send registers a call for a new message and sends it on ch.
func (c *Client) send(ch Channel, msgType string, content any) (*Message, *call, error) {
	return c.sendCall(ch, msgType, content, "", false)
}

// sendCall registers a call for a new message and sends it on ch. The
// message's msg_id is id, unless it is "", too long or the msg_id of a
// pending request (then a new one). comms: the request's comm messages
// come to its events as EventComm (see ExecuteOptions.CommEvents). The
// caller unregisters the call.
func (c *Client) sendCall(ch Channel, msgType string, content any, id string, comms bool) (*Message, *call, error) {
	body, err := json.Marshal(content)
	if err != nil {
		return nil, nil, fmt.Errorf("kernel: %s: encode content: %w", msgType, err)
	}
	msg := &Message{Header: newHeader(c.session, msgType), Content: body}
	cl := &call{comms: comms, events: newEventQueue(c.cfg.EventBuffer, c.cfg.EventBufferBytes), reply: make(chan reply, 1), done: make(chan struct{})}
	msg.Header.MsgID = c.calls.register(id, msg.Header.MsgID, cl)
	c.hb.wake() // the heartbeat runs while requests are pending
	if err := c.sendMsg(ch, msg); err != nil {
		c.calls.unregister(msg.Header.MsgID)
		return nil, nil, err
	}
	return msg, cl, nil
}

// sendMsg signs msg and sends it on ch (shell, control or stdin).
func (c *Client) sendMsg(ch Channel, msg *Message) error {
	frames, err := c.codec.Encode(msg)
	if err != nil {
		return err
	}
	sock := c.socks.forSend(ch)
	if sock == nil {
		return fmt.Errorf("kernel: cannot send on %s", ch)
	}
	select {
	case <-c.dead:
		return c.deadError()
	default:
	}
	if err := sock.send(zmq4.NewMsgFrom(frames...)); err != nil {
		if c.Err() != nil {
			return c.deadError()
		}
		return fmt.Errorf("kernel: send %s on %s: %w", msg.Header.MsgType, ch, err)
	}
	return nil
}
