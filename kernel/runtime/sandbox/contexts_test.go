package sandbox

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestEgressProxyPortIsTheLaunchers: SharedEgressEnv points a kernel at
// the port the launcher's forwarder listens on.
func TestEgressProxyPortIsTheLaunchers(t *testing.T) {
	if !strings.Contains(launcher, "\nPROXY_PORT = "+strconv.Itoa(EgressProxyPort)+"\n") {
		t.Fatalf("launcher.py's PROXY_PORT is not EgressProxyPort (%d)", EgressProxyPort)
	}
}

// TestContextsNamesAndCount: a name is taken once, MaxContexts at most,
// nothing after Close; a failed setup frees its name.
func TestContextsNamesAndCount(t *testing.T) {
	cs := NewContexts(nil)
	failing := errors.New("setup failed")
	hold := func(b *Base) error { return failing } // never launches: frees the name again
	for i := 0; i < 3; i++ {
		if _, err := cs.Start(context.Background(), "a", BaseConfig{ID: "contexts-test"}, hold); !errors.Is(err, failing) {
			t.Fatalf("start %d: %v", i, err)
		}
	}
	if n := cs.Len(); n != 0 {
		t.Fatalf("%d contexts after failed starts", n)
	}
	// Fill the set with contexts whose setup blocks, as if starting.
	release := make(chan struct{})
	started := make(chan struct{}, MaxContexts)
	var wg sync.WaitGroup
	for i := 0; i < MaxContexts; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = cs.Start(context.Background(), "c"+strconv.Itoa(i), BaseConfig{ID: "contexts-test"}, func(*Base) error {
				started <- struct{}{}
				<-release
				return failing
			})
		}()
	}
	for i := 0; i < MaxContexts; i++ {
		<-started
	}
	if _, err := cs.Start(context.Background(), "c0", BaseConfig{}, hold); !errors.Is(err, ErrContextExists) {
		t.Errorf("a name taken: %v, want ErrContextExists", err)
	}
	if _, err := cs.Start(context.Background(), "more", BaseConfig{}, hold); !errors.Is(err, ErrBadSpec) {
		t.Errorf("one more than MaxContexts: %v, want ErrBadSpec", err)
	}
	closed := make(chan error, 1)
	go func() { closed <- cs.Close(context.Background()) }()
	close(release)
	wg.Wait()
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if _, err := cs.Start(context.Background(), "late", BaseConfig{}, hold); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}
