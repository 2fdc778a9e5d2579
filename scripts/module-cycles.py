#!/usr/bin/env python3
"""Which top-level modules of src/ import which, outside tests, the pairs
that import each other, and the strongly connected groups: modules that
reach each other through a loop of any length (the house is a DAG when
there are none).

A top-level module is src/X.rs or src/X/ (main.rs, lib.rs and bin/ are the
wiring and are left out). An import is `crate::Y` anywhere in a line of
module X (a `use`, a path in code), or `super::Y` from a file directly
under src/X/... that climbs out of X. Code under `#[cfg(test)]` (the
module or item it marks, to its closing brace) and tests/ are not counted.

Usage: scripts/module-cycles.py [--edges] [--check] [SRC]
  --edges  also print every edge X -> Y with the files that make it
  --check  exit 1 when a loop has an edge that scripts/module-cycles.allowed
           does not list (a new loop), or when the file lists an edge that
           is in no loop any more (take it out: the list only shrinks, to
           none, when the house is a DAG)
"""
import os
import re
import sys
from collections import defaultdict
from pathlib import Path

WIRING = {"main", "lib", "bin"}
CRATE_PATH = re.compile(r"\bcrate::(\w+)")
# `use crate::{a, b::c}` names several modules at once.
CRATE_GROUP = re.compile(r"\bcrate::\{([^}]*)\}")


def strip(line):
    """Drop string literals and comments."""
    line = re.sub(r'"(\\.|[^"\\])*"', '""', line)
    return line.split("//", 1)[0]


def without_tests(lines):
    """The lines outside `#[cfg(test)]` items (counted by braces)."""
    out, i = [], 0
    while i < len(lines):
        if re.match(r"^\s*#\[cfg\(test\)\]", lines[i]):
            depth, started, j = 0, False, i + 1
            while j < len(lines):
                s = strip(lines[j])
                if not started and ";" in s and "{" not in s:
                    break  # `#[cfg(test)] mod x;` or a one-line item
                depth += s.count("{") - s.count("}")
                started = started or "{" in s
                if started and depth <= 0:
                    break
                j += 1
            i = j + 1
            continue
        out.append(lines[i])
        i += 1
    return out


def test_only_files(src):
    """Files declared only as `#[cfg(test)] mod x;` (their whole body is tests)."""
    found = set()
    for p in src.rglob("*.rs"):
        lines = p.read_text().splitlines()
        for k, line in enumerate(lines[:-1]):
            if re.match(r"^\s*#\[cfg\(test\)\]", line):
                m = re.match(r"^\s*(pub(\([^)]*\))?\s+)?mod\s+(\w+)\s*;", lines[k + 1])
                if m:
                    base = p.parent if p.name in ("mod.rs", "lib.rs") else p.with_suffix("")
                    found.add(base / f"{m.group(3)}.rs")
                    found.add(base / m.group(3) / "mod.rs")
    return found


def top_module(src, path):
    rel = path.relative_to(src)
    name = rel.parts[0]
    return name[:-3] if name.endswith(".rs") else name


def imports(src, path, top, text):
    """Top-level modules named by one file's code."""
    names = set()
    for m in CRATE_GROUP.finditer(text):
        for part in m.group(1).split(","):
            part = part.strip().split("::")[0].strip()
            if part and part not in ("self", "*"):
                names.add(part)
    for m in CRATE_PATH.finditer(text):
        names.add(m.group(1))
    # super:: climbing out of the top-level module: src/X/f.rs -> super:: is X
    # (stays), src/X/mod.rs -> super:: is the crate root.
    rel = path.relative_to(src)
    depth = len(rel.parts) - 1  # directories below src/
    if rel.name == "mod.rs":
        depth -= 1
    for m in re.finditer(r"\b((?:super::)+)(\w+)", text):
        ups = m.group(1).count("super::")
        if ups > depth:
            names.add(m.group(2))
    return {n for n in names if n != top and n not in WIRING}


def groups(nodes, edges):
    """The strongly connected groups of more than one module (Tarjan)."""
    succ = defaultdict(set)
    for a, b in edges:
        succ[a].add(b)
    index, low, on, stack, out = {}, {}, set(), [], []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(succ[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            g = []
            while True:
                w = stack.pop()
                on.discard(w)
                g.append(w)
                if w == v:
                    break
            if len(g) > 1:
                out.append(sorted(g))

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(out)


def check_allowed(knots, edges):
    """1 when a loop has an edge the allowed list lacks, or the list names
    an edge in no loop; the offending edges said."""
    allowed_file = Path(os.environ.get("MODULE_CYCLES_ALLOWED",
                                       Path(__file__).with_name("module-cycles.allowed")))
    allowed = set()
    if allowed_file.exists():
        allowed = {tuple(l.split("->")) for l in allowed_file.read_text().split()
                   if "->" in l and not l.startswith("#")}
    in_loops = {(a, b) for g in knots for (a, b) in edges if a in g and b in g}
    new = sorted(in_loops - allowed)
    stale = sorted(allowed - in_loops)
    for a, b in new:
        print(f"module-cycles: new loop edge {a}->{b} ({', '.join(sorted(edges[(a, b)]))}): "
              "point it down the layers (docs/ARCHITECTURE.md)")
    for a, b in stale:
        print(f"module-cycles: {a}->{b} is in no loop any more: take it out of {allowed_file.name}")
    if not new and not stale:
        print(f"no new module loop ({len(in_loops)} known edges in loops, listed in {allowed_file.name})")
    return 1 if new or stale else 0


def main():
    args = sys.argv[1:]
    edges_flag = "--edges" in args
    check = "--check" in args
    args = [a for a in args if not a.startswith("--")]
    src = Path(args[0] if args else "src")
    known = {p.stem if p.is_file() else p.name for p in src.iterdir()
             if p.suffix == ".rs" or p.is_dir()}
    skip = test_only_files(src)
    edges = defaultdict(set)  # (from, to) -> files
    for p in sorted(src.rglob("*.rs")):
        top = top_module(src, p)
        if top in WIRING or p in skip or p.name == "tests.rs":
            continue
        text = "\n".join(strip(l) for l in without_tests(p.read_text().splitlines()))
        for to in imports(src, p, top, text):
            if to in known:
                edges[(top, to)].add(str(p.relative_to(src)))
    if edges_flag:
        for (a, b), files in sorted(edges.items()):
            print(f"{a} -> {b}: {', '.join(sorted(files))}")
        print()
    pairs = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    knots = groups(known - WIRING, edges)
    if check:
        sys.exit(check_allowed(knots, edges))
    for a, b in pairs:
        print(f"{a} <-> {b}")
        print(f"    {a} -> {b}: {', '.join(sorted(edges[(a, b)]))}")
        print(f"    {b} -> {a}: {', '.join(sorted(edges[(b, a)]))}")
    for g in knots:
        inner = sorted(f"{a}->{b}" for (a, b) in edges if a in g and b in g)
        print(f"loop group of {len(g)}: {', '.join(g)}")
        print(f"    edges inside it: {', '.join(inner)}")
    print(f"{len(edges)} edges between {len(known - WIRING)} top-level modules; "
          f"{len(pairs)} pairs import each other; "
          f"{len(knots)} loop group(s), {sum(len(g) for g in knots)} modules in them")



main()
