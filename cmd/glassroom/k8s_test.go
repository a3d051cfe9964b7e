package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/glassroom/glassroom/kernel/runtime/k8s"
	"github.com/glassroom/glassroom/workspace/remote"
)

// TestK8sFlags: the flags deploy/k8s passes are accepted, also from the
// environment the Deployment sets.
func TestK8sFlags(t *testing.T) {
	var stderr bytes.Buffer
	o, err := parse([]string{"serve", "--runtime=k8s", "--listen=0.0.0.0:8888", "--k8s-kernel-image=reg/kernel:1",
		"--k8s-agent-image=reg/gateway:1", "--k8s-runtime-class=gvisor"},
		[]string{"GLASSROOM_INSTANCE=glassroom-gateway-5d8f-x2x7q", "GLASSROOM_K8S_NAMESPACE=glassroom"}, &stderr)
	if err != nil {
		t.Fatal(err, stderr.String())
	}
	if o.runtime != "k8s" || o.k8s.kernelImage != "reg/kernel:1" || o.k8s.agentImage != "reg/gateway:1" || o.k8s.runtimeClass != "gvisor" ||
		o.k8s.namespace != "glassroom" || o.instance != "glassroom-gateway-5d8f-x2x7q" {
		t.Fatalf("options %+v", o.k8s)
	}
}

// TestPodAgentCommand runs `glassroom pod-agent` (in-process) over a
// directory and uses it as the gateway does.
func TestPodAgentCommand(t *testing.T) {
	dir := t.TempDir()
	ws := filepath.Join(dir, "ws")
	if err := os.Mkdir(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	token := strings.Repeat("t", 40)
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, key, err := k8s.NewAgentCert("s1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tls.crt": cert, "tls.key": key} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var out bytes.Buffer
	go func() {
		done <- runPodAgent(ctx, []string{"--listen", addr, "--workspace", ws, "--token-file", filepath.Join(dir, "token"),
			"--control", filepath.Join(dir, "control.json"), "--status", filepath.Join(dir, "status.json"), "--quota-mb", "1",
			"--tls-cert", filepath.Join(dir, "tls.crt"), "--tls-key", filepath.Join(dir, "tls.key")}, &out)
	}()
	conf, err := k8s.AgentClientTLS(cert)
	if err != nil {
		t.Fatal(err)
	}
	// Only TLS with the session's certificate: plain HTTP gets nothing.
	plain, err := remote.NewClient(remote.ClientConfig{BaseURL: "http://" + addr, Token: token})
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	c, err := remote.NewClient(remote.ClientConfig{BaseURL: "https://" + addr, Token: token, Transport: &http.Transport{TLSClientConfig: conf}})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, err = c.Write("hello.txt", strings.NewReader("hi"))
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("the agent never took a write over TLS within 10s: last %v", err)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "hello.txt")); string(b) != "hi" {
		t.Fatalf("file %q", b)
	}
	if _, err := plain.Write("plain.txt", strings.NewReader("hi")); err == nil {
		t.Fatal("the agent answered plain HTTP")
	}
	if _, err := c.Write("big.bin", bytes.NewReader(make([]byte, 2<<20))); err == nil {
		t.Fatal("--quota-mb not applied")
	}
	c.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := runPodAgent(context.Background(), []string{"--token-file", filepath.Join(dir, "nope")}, &out); err == nil {
		t.Fatal("started without a token")
	}
}
