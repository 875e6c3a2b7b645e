# ibfab: two entry points for users, `make demo` and `make test`, both as root
# on a fresh Debian machine; they install what they need themselves.

GO       ?= go
BIN      := bin
OUT      ?= out/demo
FUZZ_BUDGET ?= 30m
FUZZ_MIN_EXECS ?= 0
FUZZ_OUT ?= fuzz-report.json
DEB_PKGS := docker.io tshark tcpdump graphviz ibsim-utils libumad2sim0 infiniband-diags opensm iproute2 gcc libc6-dev linux-libc-dev chromium prometheus prometheus-node-exporter
# IMAGE is the node image make image builds (the one ibfab export
# containerlab names by default); IMAGE_DIR its build context.
IMAGE    ?= ibfab-node:latest
IMAGE_DIR := out/image
STATICCHECK_VERSION := v0.8.2
# CYTOSCAPE_VERSION is the Cytoscape.js that ibfab serve's page vendors
# (harness/webview/assets/vendor); make vendor-web fetches it again.
CYTOSCAPE_VERSION := 3.35.0
WEB_VENDOR := harness/webview/assets/vendor

.PHONY: all build shim deps debs test unit vet fmt-check lint tidy-check demo bench fuzz clean vendor-web image

all: build

# debs installs the Debian packages the tests and the demo drive, only when missing.
debs:
	@missing=""; for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q "ok installed" || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
		echo "installing Debian packages:$$missing"; \
		echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing; \
	fi

deps: debs
	$(GO) mod download

build: deps shim
	$(GO) build -o $(BIN)/ ./cmd/...

# image builds the node image: ibswitch and ibhca built static into
# IMAGE_DIR, FROM scratch (image/Dockerfile), so no base image is pulled and
# the build needs no network. It needs a running Docker daemon.
image:
	@mkdir -p $(IMAGE_DIR)/bin
	CGO_ENABLED=0 $(GO) build -trimpath -o $(IMAGE_DIR)/bin/ ./cmd/ibswitch ./cmd/ibhca
	cp image/Dockerfile $(IMAGE_DIR)/
	DOCKER_BUILDKIT=0 docker build -q -t $(IMAGE) $(IMAGE_DIR)

# shim builds the umad LD_PRELOAD library (umadshim/) that ibfab exec --umad
# puts unmodified libibumad programs on the soft HCAs with.
shim: $(BIN)/libibfabumad.so

$(BIN)/libibfabumad.so: umadshim/ibfabumad.c
	@mkdir -p $(BIN)
	$(CC) -shared -fPIC -O2 -Wall -Wextra -Werror -o $@ $< -ldl -lpthread

vet:
	$(GO) vet ./...

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# lint runs staticcheck at the pinned version, installed into bin/ from the
# module proxy when bin/staticcheck is missing or of another version.
lint:
	@$(BIN)/staticcheck -version 2>/dev/null | grep -qF "($(STATICCHECK_VERSION:v%=%))" || \
		{ rm -f $(BIN)/staticcheck && GOBIN=$(CURDIR)/$(BIN) $(GO) install honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION); }
	$(BIN)/staticcheck ./...

tidy-check:
	$(GO) mod tidy -diff

# unit runs the unit tests alone, as any user: under -short every test
# that needs root, a Debian program or a fabric skips (testenv).
unit:
	$(GO) test -short ./...

# FABRIC_PKGS are the packages whose tests run fabrics, namespaces, ibsim,
# tshark or eBPF (their tests import a test-support package that needs
# them, or the harness); UNIT_PKGS are the others.
FABRIC_PKGS = $(shell $(GO) list -f '{{.ImportPath}}{{range .TestImports}} {{.}}{{end}}{{range .XTestImports}} {{.}}{{end}}' ./... | \
	awk '/testsupport\/(testenv|netnstest|fabrictest|ibsimtest|tsharktest)|ibfab\/harness/ {print $$1}')
UNIT_PKGS = $(filter-out $(FABRIC_PKGS),$(shell $(GO) list ./...))

# test runs every test, the root-only integration tests included: the unit
# packages two at a time, then the fabric packages one at a time, since the
# fabric, ibsim and eBPF tests of different packages would share the
# machine's cores and starve each other's pacing.
# IBFAB_INTEGRATION=1 turns a missing requirement into a failure, and
# gotestnoskip fails the run on any other skip: here every test must run.
test: deps fmt-check vet lint tidy-check
	IBFAB_INTEGRATION=1 $(GO) run ./internal/testsupport/cmd/gotestnoskip \
		$(GO) test -json -p 2 -count=1 -timeout 10m $(UNIT_PKGS)
	IBFAB_INTEGRATION=1 $(GO) run ./internal/testsupport/cmd/gotestnoskip \
		$(GO) test -json -p 1 -count=1 -timeout 40m $(FABRIC_PKGS)

# demo runs the main job on the built-in default fabric.
demo: build
	./scripts/demo.sh $(OUT)

# bench runs the micro-benchmarks (wire, link, port, agent, routing, ...),
# which use b.N. The measurement programs on real fabrics are commands:
# ibfab bench fabric|opensm|assimilation|hotspot|sm.
bench: deps
	$(GO) test -run '^$$' -bench . -benchmem ./...

# fuzz runs every fuzz target, sharing FUZZ_BUDGET and at least
# FUZZ_MIN_EXECS each, and writes what each did to FUZZ_OUT (and a table).
fuzz: deps
	$(GO) run ./internal/testsupport/cmd/fuzzbudget -budget $(FUZZ_BUDGET) -min-execs $(FUZZ_MIN_EXECS) -out $(FUZZ_OUT) -markdown

# vendor-web fetches the pinned Cytoscape.js from the npm registry (npm
# pack) into the web view's assets, with its license. The file is
# committed: builds and tests never fetch it.
vendor-web:
	@tmp=$$(mktemp -d) && trap 'rm -rf "$$tmp"' EXIT && \
		(cd "$$tmp" && npm pack --silent cytoscape@$(CYTOSCAPE_VERSION) >/dev/null && tar xzf cytoscape-$(CYTOSCAPE_VERSION).tgz) && \
		cp "$$tmp/package/dist/cytoscape.min.js" "$$tmp/package/LICENSE" $(WEB_VENDOR)/ && \
		printf 'cytoscape@%s (npm), dist/cytoscape.min.js, MIT license (LICENSE here).\nRe-fetch with make vendor-web; change the version in the Makefile'"'"'s CYTOSCAPE_VERSION.\n' $(CYTOSCAPE_VERSION) > $(WEB_VENDOR)/VERSION

clean:
	rm -rf $(BIN) out
