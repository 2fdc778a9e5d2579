# iolab: `make run` characterizes the storage under a temporary directory;
# `make test` runs every test. Both install what is missing first.

CARGO ?= cargo
# Where `make run` puts its scratch file (on the disk under test, not tmpfs).
RUN_DIR ?= /var/tmp
RUN_BUDGET ?= 5s

.PHONY: all deps build run test lint fmt bench clean

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --locked

run: build
	@dir=$$(mktemp -d $(RUN_DIR)/iolab-run.XXXXXX); \
	trap 'rm -rf "$$dir"' EXIT; \
	./target/release/iolab device --profile quick --target "$$dir" --runtime $(RUN_BUDGET) --json "$$dir/results.json"; \
	status=$$?; mkdir -p results; cp "$$dir/results.json" results/latest.json 2>/dev/null && echo "copied to results/latest.json"; exit $$status

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
