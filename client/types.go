package client

import "github.com/glassroom/glassroom/api"

// The wire types are package api's, shared with the gateway: see there
// for their fields.
type (
	// Session is the wire type api.Session.
	Session = api.Session

	// Snapshot is the wire type api.Snapshot.
	Snapshot = api.Snapshot

	// SnapshotContext is the wire type api.SnapshotContext.
	SnapshotContext = api.SnapshotContext

	// RestoreReport is the wire type api.RestoreReport.
	RestoreReport = api.RestoreReport

	// Fork is the wire type api.Fork.
	Fork = api.Fork

	// Network is the wire type api.Network.
	Network = api.Network

	// Limits is the wire type api.Limits.
	Limits = api.Limits

	// Execution is the wire type api.Execution.
	Execution = api.Execution

	// ExecError is the wire type api.ExecError.
	ExecError = api.ExecError

	// FileChange is the wire type api.FileChange.
	FileChange = api.FileChange

	// EventType is the wire type api.EventType.
	EventType = api.EventType

	// Event is the wire type api.Event.
	Event = api.Event

	// Bundle is the wire type api.Bundle.
	Bundle = api.Bundle

	// FileInfo is the wire type api.FileInfo.
	FileInfo = api.FileInfo

	// FileEntry is the wire type api.FileEntry.
	FileEntry = api.FileEntry
	// Lifecycle is what a session does at its timeout (CreateOptions).
	Lifecycle = api.Lifecycle

	// Listing is the wire type api.Listing.
	Listing = api.Listing

	// Completion is the wire type api.Completion.
	Completion = api.Completion

	// CompletionType is the wire type api.CompletionType.
	CompletionType = api.CompletionType

	// Inspection is the wire type api.Inspection.
	Inspection = api.Inspection

	// Health is the wire type api.Health.
	Health = api.Health

	// Pool is the wire type api.Pool.
	Pool = api.Pool

	// Context is the wire type api.Context: one kernel of a session.
	Context = api.Context

	// Kernel is the wire type api.Kernel: a language the gateway runs.
	Kernel = api.Kernel

	// UserExpression is the wire type api.UserExpression: the answer to
	// one of ExecuteOptions.UserExpressions
	// (Execution.DecodeUserExpressions).
	UserExpression = api.UserExpression
)

// FirstContext is the id of a session's first context, the kernel it was
// created with.
const FirstContext = "default"

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
	EventContext       = api.EventContext
	EventPage          = api.EventPage
	EventSetNextInput  = api.EventSetNextInput
	EventAskExit       = api.EventAskExit
	EventRejected      = api.EventRejected
	EventCompleteReply = api.EventCompleteReply
	EventInspectReply  = api.EventInspectReply
)
