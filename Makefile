# iolab: `make run` characterizes the storage under a temporary directory;
# `make test` runs every test. Both install what is missing first.

CARGO ?= cargo
# Where `make run` puts its scratch file (on the disk under test, not tmpfs);
# the results and report go to results/run-<UTC time>/.
RUN_DIR ?= /var/tmp
RUN_BUDGET ?= 3m
# Extra flags for `make run`'s `iolab run` (tests pass `--size 16m`).
RUN_FLAGS ?=

PREFIX ?= /usr/local

.PHONY: all deps build run test lint fmt bench clean install

all: build

deps:
	@scripts/install-deps.sh

build: deps
	$(CARGO) build --release --locked

run: build
	@dir=$$(mktemp -d $(RUN_DIR)/iolab-run.XXXXXX); \
	trap 'rm -rf "$$dir"' EXIT; \
	out=results/run-$$(date -u +%Y%m%dT%H%M%SZ); \
	./target/release/iolab run "$$dir" --budget $(RUN_BUDGET) $(RUN_FLAGS) -o "$$out"

# The house rules the compiler does not check (docs/ARCHITECTURE.md).
HOUSE_CHECKS = python3 scripts/long-functions.py --check && python3 scripts/type-names.py --check && python3 scripts/module-cycles.py --check

# A clean test build with make run's release build takes about 7.4 GiB
# under target/; with less free the linker dies of SIGBUS with no word of
# disk space, so say it first.
TEST_BUILD_KB = 7800000

# Each test executable runs its tests four at a time: most of them wait on
# runtimes, timeouts, guests and servers rather than on the 2 cores (the
# suite's test time 920 s -> 830 s on this VM).
TEST_THREADS ?= 4

test: deps
	@free=$$(df -Pk . | awk 'NR==2 {print $$4}'); \
	if [ "$$free" -lt $(TEST_BUILD_KB) ]; then \
	  echo "warning: $$((free / 1048576)) GiB free here; a clean test build needs about 7.2 GiB under target/" >&2; \
	fi
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(HOUSE_CHECKS)
	RUST_TEST_THREADS=$(TEST_THREADS) $(CARGO) test --locked

# The binary, its man pages and its bash/zsh/fish completions (generated
# from the clap definitions by iolab-gen). DESTDIR for staged installs.
install: build
	install -Dm755 target/release/iolab $(DESTDIR)$(PREFIX)/bin/iolab
	@tmp=$$(mktemp -d); trap 'rm -rf "$$tmp"' EXIT; \
	./target/release/iolab-gen "$$tmp" >/dev/null && \
	install -d $(DESTDIR)$(PREFIX)/share/man/man1 && \
	install -m644 "$$tmp"/man1/*.1 $(DESTDIR)$(PREFIX)/share/man/man1/ && \
	install -Dm644 "$$tmp"/completions/iolab.bash $(DESTDIR)$(PREFIX)/share/bash-completion/completions/iolab && \
	install -Dm644 "$$tmp"/completions/_iolab $(DESTDIR)$(PREFIX)/share/zsh/site-functions/_iolab && \
	install -Dm644 "$$tmp"/completions/iolab.fish $(DESTDIR)$(PREFIX)/share/fish/vendor_completions.d/iolab.fish
	@echo "installed iolab, its man pages and completions under $(DESTDIR)$(PREFIX)"

lint:
	$(CARGO) fmt --check
	$(CARGO) clippy --all-targets --locked -- -D warnings
	$(HOUSE_CHECKS)

fmt:
	$(CARGO) fmt

bench: build
	python3 bench/device_vs_fio.py

clean:
	$(CARGO) clean
