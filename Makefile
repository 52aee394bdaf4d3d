# oauth-relay — the two commands of the README, and what they build on.
#   make run    install what is missing, build (release), start `oauth-relay demo`
#   make test   install what is missing, run the unit tests and the integration tests
SHELL := /bin/bash
SWIFT_FLAGS ?=
RELEASE_BIN := .build/release/oauth-relay
VENV := .venv-test
PYTHON ?= python3

.PHONY: run test deps test-deps build unit-test integration-test bench clean

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

integration-test: $(VENV)/.installed
	swift build -c release $(SWIFT_FLAGS)
	OAUTH_RELAY_BIN=$(CURDIR)/$(RELEASE_BIN) $(VENV)/bin/python -m pytest -q tests/integration

test: test-deps
	$(MAKE) unit-test
	$(MAKE) integration-test

bench: test-deps build
	bench/run.sh

clean:
	rm -rf .build $(VENV)
