// Package mcp is glassroom's Model Context Protocol server: it gives a
// model tools to run Python in persistent sandboxed sessions
// (execute_python), code in any language the gateway runs (execute_code
// and list_languages: R, JavaScript, TypeScript, Bash; each language is a
// kernel of the session with its own variables), move files in and out of
// a session's workspace (upload_file, read_file, list_files), view and
// edit text files there as with a text editor (edit_file: view, create,
// str_replace, insert) and manage sessions (restart_session,
// close_session).
//
// The tools are built on a small Backend interface that *client.Client
// satisfies, so the same server runs over stdio against any gateway
// (`glassroom mcp`) and inside the gateway at /mcp (streamable HTTP),
// where the backend is a client that calls the gateway in-process with the
// caller's key. It is built on the official Go SDK
// (github.com/modelcontextprotocol/go-sdk).
//
// Output is sized for a model: text of one tool result is capped
// (Config.MaxTextChars) with a note saying how much was cut, images are
// capped in number and bytes, and ANSI colour codes are stripped.
package mcp
