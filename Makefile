# codecell: `make run` and `make test` set up whatever is missing on a Debian
# machine with Go, then serve or test.

GO      ?= go
ADDR    ?= 127.0.0.1:8080
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
# The commit, stamped explicitly: go build's own VCS stamp is missing in a git
# worktree or with -buildvcs=false.
COMMIT  ?= $(shell c=$$(git rev-parse HEAD 2>/dev/null) && { git diff --quiet HEAD 2>/dev/null || c=$$c+dirty; echo $$c; })
BIN     := bin/codecell
# Debian packages the sandbox needs: bubblewrap (production), runsc (gVisor,
# hardened), Python and matplotlib (figures come back as images), e2fsprogs
# (mkfs.ext4, for the workspaces' images), iproute2 (the network tests' hosts,
# each in a network namespace of its own), PostgreSQL and HAProxy (the
# replicas' store and balancer: tests and `make replicas` run their own,
# never the system's services); Node and npm run the real upstream MCP servers of the
# tests (installed only when missing: a machine's own Node is kept).
# The data stack every sandbox has (numpy, pandas, matplotlib and friends) comes
# from Debian too; python3-ipykernel is the warm Jupyter kernel `codecell bench`
# measures data work against.
DATA    := python3-numpy python3-scipy python3-pandas python3-matplotlib python3-sklearn python3-statsmodels \
           python3-seaborn python3-openpyxl python3-sympy python3-pil python3-lxml python3-bs4 python3-ipykernel
DEBS    := bubblewrap python3 python3-venv python3-pip e2fsprogs iproute2 postgresql haproxy $(DATA)
NPM_DIR := testdata/npm
SUDO    := $(shell [ "$$(id -u)" = 0 ] || echo sudo)

.PHONY: all deps runsc npm-deps browser-deps build run replicas test check bench fuzz clean

all: build

# Installs the Debian packages that are missing, without questions.
deps:
	@missing=""; for p in $(DEBS); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
		echo "installing:$$missing"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $$missing; \
	fi

# gVisor's runsc for the hardened level, a pinned release built from the Go
# module proxy into /usr/local/bin (where gVisor's own install puts it, and
# where codecell looks first): Debian 12's package is a 2022 runsc on the
# ptrace platform, slower than a current one on systrap (BENCHMARKS.md), and
# lacks what current releases do differently (a test caught one). It is
# built again only when the installed one is another version; static, as
# runsc re-executes itself inside its sandbox's empty root. Where the build
# fails (no Go module proxy), Debian's runsc is installed instead, and said.
RUNSC_VERSION := v0.0.0-20260905035102-160fafc42237
RUNSC         := /usr/local/bin/runsc
runsc:
	@$(GO) version -m $(RUNSC) 2>/dev/null | grep -q 'gvisor.dev/gvisor[[:space:]]*$(RUNSC_VERSION)' || { \
		echo "building gVisor's runsc $(RUNSC_VERSION) (a few minutes, once)"; \
		tmp=$$(mktemp -d); \
		if CGO_ENABLED=0 GOBIN=$$tmp $(GO) install gvisor.dev/gvisor/runsc@$(RUNSC_VERSION); then \
			$(SUDO) install -m 0755 $$tmp/runsc $(RUNSC); rm -rf $$tmp; \
		else \
			rm -rf $$tmp; \
			echo "could not build runsc $(RUNSC_VERSION): installing Debian's (older, slower) runsc instead"; \
			dpkg -s runsc >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq runsc; }; \
		fi; }

# The npm packages the tests use, pinned in $(NPM_DIR)/package-lock.json: the
# upstream MCP servers, and the TypeScript SDK client and MCP Inspector of the
# conformance suite. npm ci runs again whenever the lock differs from the one
# last installed (kept in $(NPM_STAMP)), so that a machine set up before the
# pins changed picks the change up. The Inspector needs Node 20 or later.
NPM_STAMP := $(NPM_DIR)/node_modules/.codecell-package-lock.json
npm-deps:
	@command -v npm >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq nodejs npm; }
	@cmp -s $(NPM_DIR)/package-lock.json $(NPM_STAMP) || { \
		npm ci --prefix $(NPM_DIR) --no-audit --no-fund && cp $(NPM_DIR)/package-lock.json $(NPM_STAMP); }

# Headless Chromium for the dashboard's browser tests: Debian's chromium,
# installed only when none is on the PATH.
browser-deps:
	@command -v chromium >/dev/null 2>&1 || { $(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq chromium; }

build:
	$(GO) build -ldflags "-X main.version=$(VERSION) -X main.commit=$(COMMIT)" -o $(BIN) ./cmd/codecell

# Serves MCP over Streamable HTTP at http://$(ADDR)/mcp and the dashboard at
# http://$(ADDR)/. MCP hosts that spawn
# codecell use `bin/codecell serve` (stdio) instead; see the README.
run: deps runsc build
	$(BIN) doctor
	@echo "dashboard: http://$(ADDR)/  MCP endpoint: http://$(ADDR)/mcp"
	$(BIN) serve --http $(ADDR)

# Three replicas on one data dir and a PostgreSQL of their own, behind HAProxy
# at http://$(ADDR)/mcp (deploy/replicas.sh; README: "Several replicas").
replicas: deps build
	ADDR=$(ADDR) deploy/replicas.sh

test: deps runsc npm-deps browser-deps
	$(GO) vet ./...
	$(GO) test -race -timeout 20m ./...

# The fast lane, for every change: vet and the tests that need no setup
# beyond Go, Python and bubblewrap (go test -short: no codecell binary, no
# PostgreSQL, HAProxy, browser, gVisor or npm packages; those tests skip
# and say so). Minutes; make test runs everything.
check:
	$(GO) vet ./...
	$(GO) test -short -timeout 10m ./...

# The latency benchmark recorded in BENCHMARKS.md.
bench: deps runsc
	$(GO) test -run '^$$' -bench 'ExecuteCode|PythonSpawn' -benchtime 500x ./cmd/codecell/
	$(GO) test -run '^$$' -bench 'BenchmarkExec$$|BenchmarkSessionExec' -benchtime 500x ./internal/sandbox/
	$(GO) test -run '^$$' -bench 'WorkspaceSize|PythonSpawn' -benchtime 500x -timeout 60m ./cmd/codecell/
	$(GO) test -run '^$$' -bench 'Search' ./internal/catalog/
	$(GO) test -run '^$$' -bench 'AggregateMillion' -benchtime 3x ./internal/analysis/
	$(GO) test -run 'TestReplicasThroughput' -v -timeout 30m ./cmd/codecell/ -args -replicas-bench

# A short run of every fuzz target.
fuzz:
	$(GO) test -run '^$$' -fuzz FuzzReader -fuzztime 30s ./internal/channel/
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 30s ./internal/config/
	$(GO) test -run '^$$' -fuzz FuzzResolve -fuzztime 30s ./internal/workspace/
	$(GO) test -run '^$$' -fuzz FuzzTokenizeRestore -fuzztime 30s ./internal/pii/
	$(GO) test -run '^$$' -fuzz FuzzParseRequirement -fuzztime 30s ./internal/envs/
	$(GO) test -run '^$$' -fuzz FuzzGenerate -fuzztime 30s ./internal/codegen/

clean:
	rm -rf bin
