package client

import "github.com/glassroom/glassroom/api"

// The wire types, shared with the gateway (package api); see there for
// their fields.
type (
	Session        = api.Session
	Network        = api.Network
	Limits         = api.Limits
	Execution      = api.Execution
	ExecError      = api.ExecError
	FileChange     = api.FileChange
	EventType      = api.EventType
	Event          = api.Event
	Bundle         = api.Bundle
	FileInfo       = api.FileInfo
	FileEntry      = api.FileEntry
	Listing        = api.Listing
	Completion     = api.Completion
	CompletionType = api.CompletionType
	Inspection     = api.Inspection
	Health         = api.Health
	Pool           = api.Pool
)

// Execution statuses and event types (package api).
const (
	StatusOK           = api.StatusOK
	StatusError        = api.StatusError
	StatusTimeout      = api.StatusTimeout
	StatusInterrupted  = api.StatusInterrupted
	StatusDied         = api.StatusDied
	EventKernel        = api.EventKernel
	EventQueued        = api.EventQueued
	EventStarted       = api.EventStarted
	EventStream        = api.EventStream
	EventDisplay       = api.EventDisplay
	EventUpdateDisplay = api.EventUpdateDisplay
	EventClearOutput   = api.EventClearOutput
	EventResult        = api.EventResult
	EventError         = api.EventError
	EventInputRequest  = api.EventInputRequest
	EventFile          = api.EventFile
	EventDone          = api.EventDone
	EventGap           = api.EventGap
	EventNetwork       = api.EventNetwork
	EventRejected      = api.EventRejected
	EventCompleteReply = api.EventCompleteReply
	EventInspectReply  = api.EventInspectReply
)
