# iolab: `make run` characterizes the storage under a temporary directory;
# `make test` runs every test. Both install what is missing first.

CARGO ?= cargo
# Where `make run` puts its scratch file (on the disk under test, not tmpfs);
# the results and report go to results/run-<UTC time>/.
RUN_DIR ?= /var/tmp
RUN_BUDGET ?= 3m

.PHONY: all deps build run test lint fmt bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --locked

run: build
	@dir=$$(mktemp -d $(RUN_DIR)/iolab-run.XXXXXX); \
	trap 'rm -rf "$$dir"' EXIT; \
	out=results/run-$$(date -u +%Y%m%dT%H%M%SZ); \
	./target/release/iolab run "$$dir" --budget $(RUN_BUDGET) -o "$$out"

test: deps
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(CARGO) test --locked

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets --locked -- -D warnings

fmt:
	$(CARGO) fmt

bench: build
	bench/device_vs_fio.sh

clean:
	$(CARGO) clean
