# oauth-relay — the two commands of the README, and what they build on.
#   make run    install what is missing, build (release), start `oauth-relay demo`
#   make test   install what is missing, run the unit tests (also the optimised ones below) and the
#               integration tests
#   make test-checked   the proxy, token and reload integration tests against a debug build
#                       (Swift's exclusivity checks on: release builds turn them off)
#   make test-tsan      the thread-sensitive unit tests and the same integration tests under
#                       ThreadSanitizer (a separate build in .build-tsan)
#   make test-asan      every unit test and the same integration tests under AddressSanitizer
#                       (a separate build in .build-asan)
#   make soak           SOAK_MINUTES (30) of mixed traffic, reloads, logins and Redis restarts against
#                       the release binary; fails on RSS or descriptor growth or an unexpected failure
#   make fuzz           every libFuzzer target in Tests/Fuzz for FUZZ_SECONDS (120) each
#   make test-container the image built from Docker/Dockerfile with podman and run for real
#                       (tests/container; needs root: podman, ip netns)
#   make dist           the release artifacts in dist/: a tarball (binary built with
#                       --static-swift-stdlib, README, sample configs, JSON Schema) and a .deb
#   make test-dist      make dist, then install the .deb into a copy of a debootstrap'd Debian 12
#                       root (chroot) and test it there (tests/dist)
SHELL := /bin/bash
SWIFT_FLAGS ?=
RELEASE_BIN := .build/release/oauth-relay
VENV := .venv-test
PYTHON ?= python3
# The git commit every build below is made from: Package.swift reads it into the binary
# (`--version`, GET /version, the start-up log line). Empty outside a git checkout: "unknown".
# Read once (:=), so that every build of one make run names the same commit; only this checkout's
# own git (a source tree unpacked inside another repository is not that repository's commit).
ifndef OAUTH_RELAY_COMMIT
OAUTH_RELAY_COMMIT := $(shell [ "$$(git rev-parse --show-toplevel 2>/dev/null)" = "$(CURDIR)" ] && git rev-parse HEAD)
endif
export OAUTH_RELAY_COMMIT
# make dist's build: --static-swift-stdlib changes every compilation, so it has its own scratch
# directory instead of rebuilding .build/release (make build's) each way.
DIST_BUILD := .build-dist
DIST_BIN := $(DIST_BUILD)/release/oauth-relay
# swift-argument-parser's generate-manual plugin writes the man page here (from .build/release).
MANPAGE := .build/plugins/GenerateManual/outputs/OAuthRelay/oauth-relay.1

.PHONY: run test deps test-deps build unit-test unit-test-optimized integration-test fuzz-smoke fuzz test-checked test-tsan test-asan soak test-container bench dist test-dist clean

deps:
	scripts/install-deps

test-deps:
	scripts/install-deps --test

build: deps
	swift build -c release $(SWIFT_FLAGS)

run: build
	$(RELEASE_BIN) demo

$(VENV)/.installed: tests/requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install --quiet --disable-pip-version-check -r tests/requirements.txt
	touch $@

unit-test:
	swift test $(SWIFT_FLAGS)

# The unit tests that only an optimised build can fail: a debug build retains a reference around
# each call through a protocol, which keeps alive an object that the release build calls without
# a retain (UpstreamConnection's owner, held once per read). In release with testability, in a
# scratch directory of its own so that .build/release keeps make build's flags.
OPTIMIZED_TESTS := ClientExchangeTests|ParserDelegateTests
unit-test-optimized:
	swift build -c release --build-tests --scratch-path .build-release-tests -Xswiftc -enable-testing $(SWIFT_FLAGS)
	swift test -c release --skip-build --scratch-path .build-release-tests --filter '$(OPTIMIZED_TESTS)' $(SWIFT_FLAGS)

integration-test: $(VENV)/.installed
	swift build -c release $(SWIFT_FLAGS)
	OAUTH_RELAY_BIN=$(CURDIR)/$(RELEASE_BIN) $(VENV)/bin/python -m pytest -q tests/integration

test: test-deps
	$(MAKE) unit-test
	$(MAKE) unit-test-optimized
	$(MAKE) fuzz-smoke
	$(MAKE) integration-test

# Each fuzz target for a few seconds, so none can rot; `make fuzz` is the real run.
fuzz-smoke:
	scripts/fuzz --seconds 5

fuzz:
	scripts/fuzz --seconds $${FUZZ_SECONDS:-120}

# The integration tests that drive the data path, the token hand-off and reloads, for the
# checked and sanitized builds (the others test the CLI, schema and packaging).
CHECKED_TESTS := tests/integration/oauth tests/integration/test_forwarding.py tests/integration/test_bodies.py \
	tests/integration/test_keepalive.py tests/integration/test_upgrade.py tests/integration/test_shutdown.py \
	tests/integration/test_reload.py tests/integration/test_timeouts.py tests/integration/test_malformed.py \
	tests/integration/test_hardening.py tests/integration/tls/test_tls_rotation.py
# The one test left out: its IdP holds the refresh for a scaled time against an unscaled 4 s token
# lifetime, so a slowed-down run makes the token expire before it arrives.
CHECKED_SKIP := -k "not right_after_expiry"
TSAN_BUILD := .build-tsan
TSAN_FLAGS := --scratch-path $(TSAN_BUILD) -c debug -Xswiftc -sanitize=thread

test-checked: test-deps $(VENV)/.installed
	swift build -c debug $(SWIFT_FLAGS)
	OAUTH_RELAY_BIN=$(CURDIR)/.build/debug/oauth-relay OAUTH_RELAY_TEST_TIME_SCALE=3 \
		$(VENV)/bin/python -m pytest -q -m "not slow" $(CHECKED_SKIP) $(CHECKED_TESTS)

test-tsan: test-deps $(VENV)/.installed
	swift build $(TSAN_FLAGS) --build-tests
	TSAN_OPTIONS=halt_on_error=1 swift test $(TSAN_FLAGS) --skip-build --filter 'EventLoopTests|TokensTests|TokenHandOff|RelayMetricsTests'
	OAUTH_RELAY_BIN=$(CURDIR)/$(TSAN_BUILD)/debug/oauth-relay OAUTH_RELAY_TEST_TIME_SCALE=5 OAUTH_RELAY_TEST_SANITIZER=thread TSAN_OPTIONS=halt_on_error=1 \
		$(VENV)/bin/python -m pytest -q -m "not slow" $(CHECKED_SKIP) $(CHECKED_TESTS)

# AddressSanitizer over every unit test and the same integration tests: out-of-bounds reads and
# writes, use after free, in the relay's code and in what it hands C libraries (the hiredis the
# relay once used read past each command handed to it; this target found it). LeakSanitizer
# checks every relay the integration tests start: the relay exits 0 on SIGTERM, so its leak check
# runs when each test's fixture stops it (a leak makes it exit 1, ASan's exit code, which the fixture reports).
# Leak checks stay off for the unit-test process: there LeakSanitizer reports Swift objects
# reachable only through pointers Swift stores with tag bits (multi-payload enums, side tables),
# which it cannot read (swiftlang/swift-corelibs-xctest#342, llvm/llvm-project#56751).
# Every report goes to a file in ASAN_LOGS (log_path: one per process that found something); the
# target fails when any file is there, and prints them. scripts/lsan.supp is for allocations the
# Swift runtime or a C library makes once and never frees (none today).
ASAN_BUILD := .build-asan
ASAN_FLAGS := --scratch-path $(ASAN_BUILD) -c debug --sanitize=address
ASAN_LOGS := $(CURDIR)/$(ASAN_BUILD)/sanitizer-reports
SANITIZER_ENV = OAUTH_RELAY_TEST_SANITIZER=address ASAN_OPTIONS=detect_leaks=$(1):log_path=$(ASAN_LOGS)/report \
	LSAN_OPTIONS=suppressions=$(CURDIR)/scripts/lsan.supp:print_suppressions=0

test-asan: test-deps $(VENV)/.installed
	swift build $(ASAN_FLAGS) --build-tests
	rm -rf $(ASAN_LOGS) && mkdir -p $(ASAN_LOGS)
	$(call SANITIZER_ENV,0) swift test $(ASAN_FLAGS) --skip-build || { scripts/sanitizer-reports $(ASAN_LOGS); exit 1; }
	OAUTH_RELAY_BIN=$(CURDIR)/$(ASAN_BUILD)/debug/oauth-relay OAUTH_RELAY_TEST_TIME_SCALE=3 $(call SANITIZER_ENV,1) \
		$(VENV)/bin/python -m pytest -q -m "not slow" $(CHECKED_SKIP) $(CHECKED_TESTS) || { scripts/sanitizer-reports $(ASAN_LOGS); exit 1; }
	scripts/sanitizer-reports $(ASAN_LOGS)

# The soak (README: Soak): the release binary with nginx, redis-server and django-oauth-toolkit
# around it for SOAK_MINUTES, its RSS, descriptors, upstream connections and token queue recorded
# every minute (tests/soak/soak.py). Not part of `make test`.
SOAK_MINUTES ?= 30

soak: test-deps $(VENV)/.installed
	swift build -c release --product oauth-relay $(SWIFT_FLAGS)
	OAUTH_RELAY_BIN=$(CURDIR)/$(RELEASE_BIN) $(VENV)/bin/python tests/soak/soak.py --minutes $(SOAK_MINUTES)

# Docker/Dockerfile as it is, built by podman on base images made here (scripts/container-images:
# no registry needed), then run as a user runs it. --format docker: podman's default (OCI)
# image format has no HEALTHCHECK, and the tests run the image's. --network host: the build
# stages run apt-get.
CONTAINER_IMAGE := localhost/oauth-relay:test

test-container: $(VENV)/.installed
	scripts/container-images
	podman build --pull=never --network host --format docker --build-arg OAUTH_RELAY_COMMIT=$(OAUTH_RELAY_COMMIT) \
		-t $(CONTAINER_IMAGE) -f Docker/Dockerfile .
	OAUTH_RELAY_IMAGE=$(CONTAINER_IMAGE) $(VENV)/bin/python -m pytest -q tests/container

# Debian 13 (trixie): scripts/install-deps from Debian 13's archive, the build and every unit test, in a
# chroot of a debootstrap'd root with this machine's Swift toolchain mounted in (root; see
# scripts/test-debian13). Not part of `make test`.
.PHONY: test-debian13
test-debian13:
	scripts/test-debian13

bench: test-deps build
	bench/run.sh

# The manual's date is the commit's, so that one commit makes one man page.
dist: deps
	swift build -c release --static-swift-stdlib --scratch-path $(DIST_BUILD) --product oauth-relay
	swift package generate-manual --date $$(git log -1 --format=%cs 2>/dev/null || date +%F)
	scripts/make-dist $(DIST_BIN) $(MANPAGE) dist

# As root (debootstrap, chroot, mount); not part of `make test`: after `make dist`, about 45 s of tests
# (most of it apt-get from the Debian archive), and a first run makes the Debian 12 root (about 60 s).
test-dist: dist $(VENV)/.installed
	@command -v strace >/dev/null && command -v systemd-analyze >/dev/null || { apt-get update -qq && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends strace systemd >/dev/null; }
	$(VENV)/bin/python -m pytest -q -p no:cacheprovider tests/dist

clean:
	rm -rf .build $(DIST_BUILD) $(TSAN_BUILD) $(ASAN_BUILD) dist $(VENV)
