# glassroom: `make run` serves, `make test` runs every check. See README.md.
GO ?= $(shell command -v go 2>/dev/null || echo /usr/local/go/bin/go)
ARGS ?=
LISTEN ?= 127.0.0.1:8888
# The preview origin (servers the sandboxes run, at {port}-{session}.localhost:8890).
PREVIEW_LISTEN ?= 127.0.0.1:8890

.PHONY: all generate build run deps test-deps docker image kube vet fmt-check lint test test-go test-runsc test-heavy test-stress bench fuzz compose clean web-vendor

all: build

# Regenerates what package api's types determine: the OpenAPI document's
# schemas and the TypeScript declarations of the web UI and sdk/js.
generate:
	$(GO) generate ./gateway/

deps:
	scripts/install-deps.sh runtime

test-deps:
	scripts/install-deps.sh test

build:
	CGO_ENABLED=0 $(GO) build -trimpath -o bin/glassroom ./cmd/glassroom

# Serves on loopback with the local (bubblewrap) runtime; prints a ready-to-click URL.
run: deps build
	./bin/glassroom serve --listen $(LISTEN) --preview-listen $(PREVIEW_LISTEN) $(ARGS)

# Starts dockerd if needed and builds the kernel image (skipped when unchanged).
docker:
	scripts/start-dockerd.sh

image: docker
	images/python/build.sh

vet:
	$(GO) vet -tags heavy ./...

fmt-check:
	@out="$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))"; \
	if [ -n "$$out" ]; then echo "gofmt needed:"; echo "$$out"; exit 1; fi

# golangci-lint at a pinned version (config: .golangci.yml), built once from
# the Go module proxy into bin/tools (about a minute) and reused after.
GOLANGCI_VERSION := v2.15.0
GOLANGCI := bin/tools/golangci-lint-$(GOLANGCI_VERSION)
$(GOLANGCI):
	mkdir -p bin/tools
	GOBIN=$(CURDIR)/bin/tools $(GO) install github.com/golangci/golangci-lint/v2/cmd/golangci-lint@$(GOLANGCI_VERSION)
	mv bin/tools/golangci-lint $@

lint: $(GOLANGCI)
	$(GOLANGCI) run --build-tags heavy ./...

test-go:
	$(GO) test -race -count=1 -timeout 30m ./...

# The Docker runtime's suite again under gVisor: runsc as registered by
# scripts/start-dockerd.sh (with --oci-seccomp: the runtime refuses a runsc
# that would ignore the seccomp profile). It runs the hardening suite's
# system-call and socket checks inside the sandbox, the containment and
# fork-bomb tests, and a sandbox death's explanation.
test-runsc:
	GLASSROOM_TEST_OCI_RUNTIME=runsc $(GO) test -race -count=1 -timeout 20m ./kernel/runtime/docker/

# The suites that need most of the machine (hundreds of kernels) or restart
# a Docker engine run after the rest, one package at a time: files tagged
# "heavy" (the density test, then the fault suite on the real binary).
test-heavy:
	$(GO) test -tags heavy -race -count=1 -p 1 -timeout 40m ./density/
	$(GO) test -tags heavy -count=1 -run '^TestFault' -timeout 20m ./cmd/glassroom/

# A real single-node Kubernetes cluster (etcd, API server, scheduler,
# controller manager, kubelet, containerd) for the k8s runtime's tests:
# built once into /var/cache/glassroom, state in /var/lib/glassroom-kube
# (docs/operations.md, "The test cluster"). `scripts/kube-up.sh down` stops it.
kube: image
	scripts/kube-up.sh up

# Every check: installs what the tests need, starts Docker, builds the
# image, brings up the cluster.
test: test-deps image kube vet fmt-check lint test-go test-runsc test-heavy

# The flake hunt: the tests that once failed in CI, 5 times each beside 4
# CPU burners; reports every test that failed at least once
# (scripts/stress.sh; STRESS_ARGS="-n 2 ./mcp:TestRunCommand" picks).
STRESS_ARGS ?=
test-stress: test-deps image
	scripts/stress.sh $(STRESS_ARGS)

# Kernel round trip, cold start, idle memory and the first result in a new
# context per language, change tracking in a 10k-file workspace, cold and pooled
# session start, the first analysis cell (cold, pooled, pooled with the
# preload), idle memory, the gateway's overhead over a direct kernel
# client (local, and docker when an engine and the image exist), density,
# 100 timed-out cells beside 4 CPU burners (how many keep their variables), and
# the load harness beside jupyter_server.
bench: deps
	$(GO) test -run '^$$' -bench . -benchtime 300x ./kernel/
	$(GO) test -run '^$$' -bench . -benchtime 2000x ./workspace/
	$(GO) test -run '^$$' -bench 'ColdSession|IdleMemory|ExecuteAfterPause' -benchtime 5x ./sessions/
	$(GO) test -run '^$$' -bench PooledSession -benchtime 40x ./sessions/
	$(GO) test -run '^$$' -bench FirstAnalysisCell -benchtime 8x ./sessions/
	$(GO) test -run '^$$' -bench 'Language' -benchtime 3x ./sessions/
	$(GO) test -run '^$$' -bench . -benchtime 300x ./client/ ./mcp/
	$(GO) test -run '^$$' -bench 'JupyterRoundTrip|GatewayOverhead' -benchtime 300x ./gateway/
	DENSITY_SESSIONS=$${DENSITY_SESSIONS:-100} $(GO) test -tags heavy -run '^$$' -bench Density -benchtime 1x -timeout 30m ./density/
	TIMEOUT_SESSIONS=$${TIMEOUT_SESSIONS:-100} $(GO) test -tags heavy -run '^$$' -bench TimeoutUnderLoad -benchtime 1x -timeout 30m ./density/
	$(MAKE) build
	scripts/bench.sh

fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzDecode$$' -fuzztime 60s ./kernel/
	$(GO) test -run '^$$' -fuzz '^FuzzDecodeEvent$$' -fuzztime 60s ./kernel/
	$(GO) test -run '^$$' -fuzz '^FuzzGuard$$' -fuzztime 60s ./kernel/
	$(GO) test -run '^$$' -fuzz '^FuzzJupyterFrame$$' -fuzztime 60s ./gateway/jupyter/

# Rebuilds the notebook's committed third-party bundle (CodeMirror, markdown-it,
# DOMPurify) from web/vendor's lockfile: web/static/vendor/vendor.js and
# LICENSES.txt. Only this target needs npm; the same lockfile gives the same bytes.
web-vendor:
	cd web/vendor && npm ci --ignore-scripts --no-audit --no-fund && node build.mjs

COMPOSE ?= $(shell docker compose version >/dev/null 2>&1 && echo "docker compose" || echo docker-compose)
compose: build image
	@test -f .env || { echo 'create .env with GLASSROOM_API_KEYS=<key> (see docs/operations.md: Docker Compose)'; exit 1; }
	d=/run/glassroom/compose; mkdir -p $$d; findmnt -no PROPAGATION -T $$d | grep -q shared || { mount --bind $$d $$d && mount --make-rshared $$d; }
	$(COMPOSE) up --build

clean:
	rm -rf bin artifacts mcp/testdata/node/node_modules gateway/jupyter/testdata/jlab/node_modules
