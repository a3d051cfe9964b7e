// Package client is a typed Go client for glassroom's v1 API: sessions,
// executions over REST (Execute) or streamed over the WebSocket (Run, or a
// Conn for full control), interrupts and restarts, completion and
// inspection, workspace files, and the languages and contexts of a session
// (Kernels, CreateSession's Language, CreateContext, Contexts,
// DeleteContext, RestartContext; ExecuteOptions and RunOptions pick a
// context by id or a language's default context). ExecuteOptions and
// RunOptions take user expressions, which Execution.DecodeUserExpressions
// answers; what code asks of its front end (obj?'s help, %load's text,
// exit()) comes as page, set_next_input and ask_exit events, in
// Execution.Outputs too.
//
// It is a plain HTTP and WebSocket client: it imports nothing of
// glassroom's internals, so it can be vendored by any Go program.
//
//	c, err := client.New(client.Config{BaseURL: "http://127.0.0.1:8888", APIKey: key})
//	s, err := c.CreateSession(ctx, client.CreateOptions{})
//	defer c.DeleteSession(context.Background(), s.ID)
//	x, err := c.Execute(ctx, s.ID, "x = 41\nx + 1", client.ExecuteOptions{})
//	fmt.Println(x.Result.Text("text/plain")) // 42
//	r, err := c.Execute(ctx, s.ID, `cat(6 * 7)`, client.ExecuteOptions{Language: "r"}) // R's default context
//
// A Client is safe for concurrent use. Errors from the gateway are
// *APIError values that match the sentinels (ErrNotFound, ErrUnauthorized,
// ...) with errors.Is.
package client
