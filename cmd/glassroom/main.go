// Command glassroom runs the glassroom gateway: a persistent, sandboxed
// Python (Jupyter kernel) per session, over HTTP and WebSocket.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/glassroom/glassroom/sessionstore"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == sessionstore.CheckArg { // the session store's check, in a process of its own
		os.Exit(sessionstore.CheckMain(os.Args[2:], os.Stdout, os.Stderr))
	}
	if len(os.Args) > 1 && os.Args[1] == "kernels" { // the kernel registry, for the image build
		if err := kernelsCommand(os.Args[2:], os.Stdout, os.Stderr); err != nil {
			fmt.Fprintln(os.Stderr, "glassroom:", err)
			os.Exit(2)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Environ(), os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "glassroom:", err)
		os.Exit(1)
	}
}
