package api

// The commands of EditRequest, in the shape of agents' text-editor tools.
const (
	EditView       = "view"
	EditCreate     = "create"
	EditStrReplace = "str_replace"
	EditInsert     = "insert"
)

// EditRequest is the body of PATCH /v1/sessions/{id}/files/{path}: one
// command on a UTF-8 text file of the workspace. A nil pointer is an
// absent argument; an argument the command does not take is refused.
//
//   - view: the file with numbered lines; ViewRange [start, end] (lines
//     from 1, both included; end -1 for the end of the file) narrows it.
//   - create: FileText becomes the file (parents created, an existing
//     file replaced).
//   - str_replace: OldStr, which must occur exactly once, becomes NewStr
//     (absent: deleted). Zero or several matches fail (409) and change
//     nothing.
//   - insert: NewStr goes after line InsertLine (0: the top of the file;
//     the number of lines: its end).
type EditRequest struct {
	Command    string  `json:"command"`
	ViewRange  []int   `json:"view_range,omitempty"`
	FileText   *string `json:"file_text,omitempty"`
	OldStr     *string `json:"old_str,omitempty"`
	NewStr     *string `json:"new_str,omitempty"`
	InsertLine *int    `json:"insert_line,omitempty"`
}

// EditResult is the answer to an EditRequest (200; 201 when create made a
// new file).
type EditResult struct {
	Path    string `json:"path"` // relative to the workspace
	Command string `json:"command"`
	Created bool   `json:"created,omitempty"` // create made a new file
	Size    int64  `json:"size"`              // bytes of the file after the command
	Lines   int    `json:"lines"`             // lines of the file after the command
	// Text is, for view, the lines asked for; for str_replace and insert,
	// a snippet of the file around the change; each line as
	// "%6d\t<line>\n" (its number right-aligned, a tab, the line without
	// its line ending). Empty for create and for an empty file.
	Text string `json:"text,omitempty"`
	// StartLine and EndLine are the first and last line in Text.
	StartLine int `json:"start_line,omitempty"`
	EndLine   int `json:"end_line,omitempty"`
}
