package main

import (
	"context"
	"io"
	"strings"
	"testing"
)

func TestParseMCP(t *testing.T) {
	env := []string{"GLASSROOM_URL=http://10.0.0.1:9", "GLASSROOM_API_KEY=env-key-0123456789"}
	o, err := parseMCP(nil, env, io.Discard)
	if err != nil || o.url != "http://10.0.0.1:9" || o.apiKey != "env-key-0123456789" || o.embedded {
		t.Fatalf("env: %+v %v", o, err)
	}
	o, err = parseMCP([]string{"--url", "http://127.0.0.1:1", "--api-key", "flag-key-0123456789"}, env, io.Discard)
	if err != nil || o.url != "http://127.0.0.1:1" || o.apiKey != "flag-key-0123456789" {
		t.Fatalf("flags win: %+v %v", o, err)
	}
	o, err = parseMCP(nil, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "API key") {
		t.Fatalf("no key: %+v %v", o, err)
	}
	o, err = parseMCP([]string{"--embedded", "--", "--runtime", "docker"}, env, io.Discard)
	if err != nil || !o.embedded || o.url != "" || strings.Join(o.serveArgs, " ") != "--runtime docker" {
		t.Fatalf("embedded: %+v %v", o, err)
	}
	if _, err := parseMCP([]string{"--embedded", "--url", "http://x:1"}, nil, io.Discard); err == nil {
		t.Fatal("--embedded with --url accepted")
	}
	if _, err := parseMCP([]string{"--api-key", "k", "stray"}, nil, io.Discard); err == nil {
		t.Fatal("stray argument accepted")
	}
}

// TestRunMCPRefusesAnUnusableGateway: a wrong URL fails at start with a
// clear error instead of serving tools that cannot work.
func TestRunMCPRefusesAnUnusableGateway(t *testing.T) {
	err := run(context.Background(), []string{"mcp", "--url", "http://127.0.0.1:1", "--api-key", "k-0123456789abcdef"}, nil, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "not usable") {
		t.Fatalf("got %v", err)
	}
}
