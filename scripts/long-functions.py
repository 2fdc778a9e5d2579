#!/usr/bin/env python3
"""List Rust functions longer than a limit (default 150 lines), outside
tests: the house rule that a long function usually holds two ideas.
Usage: scripts/long-functions.py [--max N] [--check] [DIR...]
With --check, exit 1 when any is found (make lint runs it)."""
import re
import sys
from pathlib import Path

FN = re.compile(r"^\s*(pub(\([^)]*\))?\s+)?(const\s+)?(async\s+)?(unsafe\s+)?(extern\s+\"C\"\s+)?fn\s+(\w+)")


def strip(line):
    """Drop string/char literals and comments so braces count true."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    line = re.sub(r"'(\\.|[^'\\])'", "''", line)
    return line.split("//", 1)[0]


def functions(path):
    lines = path.read_text().splitlines()
    in_tests = False
    i = 0
    while i < len(lines):
        if re.match(r"^\s*#\[cfg\(test\)\]", lines[i]):
            in_tests = True
        m = FN.match(lines[i])
        if m and not in_tests:
            depth, started, j = 0, False, i
            while j < len(lines):
                s = strip(lines[j])
                if not started and ";" in s and "{" not in s:
                    break  # a declaration without a body
                depth += s.count("{") - s.count("}")
                started = started or "{" in s
                if started and depth <= 0:
                    yield m.group(7), i + 1, j - i + 1
                    break
                j += 1
        i += 1


def main():
    args = sys.argv[1:]
    limit, check = 150, False
    if "--max" in args:
        k = args.index("--max")
        limit = int(args[k + 1])
        del args[k : k + 2]
    if "--check" in args:
        check = True
        args.remove("--check")
    found = []
    for d in args or ["src"]:
        for p in sorted(Path(d).rglob("*.rs")):
            for name, line, n in functions(p):
                if n > limit:
                    found.append(f"{p}:{line}: fn {name} is {n} lines (max {limit})")
    print("\n".join(found) if found else f"no function over {limit} lines")
    sys.exit(1 if check and found else 0)


main()
