#!/usr/bin/env bash
# Build FerretDB (a MongoDB wire-protocol server over SQLite), the test double
# for `iolab kv --engine mongodb`, from the Go module proxy into a cache
# outside the repository. Idempotent and quiet when the binary is present.
#
# A plain `go install ...@VERSION` builds a binary that panics at start
# (no build/version/version.txt), so the module is copied out of the
# read-only module cache, the version file written and ./cmd/ferretdb built.
#
# Exit status: 0 when the binary is present afterwards, 1 otherwise (one line
# on stderr saying why).
set -euo pipefail

VERSION="${IOLAB_FERRETDB_VERSION:-v1.24.2}"
DEST="${IOLAB_FERRETDB_DIR:-${HOME}/.cache/iolab/ferretdb}"
BIN="$DEST/$VERSION/ferretdb"

if [ -x "$BIN" ]; then
  exit 0
fi

GO="${GO:-}"
if [ -z "$GO" ]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [ -x /usr/local/go/bin/go ]; then GO=/usr/local/go/bin/go
  else
    echo "build-ferretdb: no Go toolchain (go on PATH or /usr/local/go/bin/go); the mongodb tests will skip" >&2
    exit 1
  fi
fi

work="$(mktemp -d)"
trap 'chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"' EXIT
export GOPATH="$work/gopath" GOFLAGS=-modcacherw GOTOOLCHAIN=local

if ! info="$("$GO" mod download -json "github.com/FerretDB/FerretDB@$VERSION" 2>"$work/err")"; then
  # With -json, go reports the reason in the "Error" field on stdout.
  why="$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",\{0,1\}$/\1/p' | head -n1)"
  [ -n "$why" ] || why="$(tail -n1 "$work/err")"
  echo "build-ferretdb: the Go module proxy did not serve FerretDB $VERSION ($why); the mongodb tests will skip" >&2
  exit 1
fi
moddir="$(printf '%s' "$info" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')"
if [ -z "$moddir" ] || [ ! -d "$moddir" ]; then
  echo "build-ferretdb: go mod download gave no module directory; the mongodb tests will skip" >&2
  exit 1
fi

cp -r "$moddir" "$work/src"
chmod -R u+w "$work/src"
mkdir -p "$work/src/build/version"
printf '%s\n' "$VERSION" >"$work/src/build/version/version.txt"
if ! (cd "$work/src" && "$GO" build -o "$work/ferretdb" ./cmd/ferretdb) 2>"$work/err"; then
  echo "build-ferretdb: go build failed ($(tail -n1 "$work/err")); the mongodb tests will skip" >&2
  exit 1
fi

mkdir -p "$DEST/$VERSION"
mv "$work/ferretdb" "$BIN.tmp"
mv "$BIN.tmp" "$BIN"
echo "build-ferretdb: installed $BIN" >&2
