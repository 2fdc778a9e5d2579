#!/usr/bin/env python3
"""List public type names (struct, enum, trait, type alias) defined in more
than one module of src/: the house rule is one meaning per name, so a
reader who sees `Target` or `Outcome` knows which one it is.
Usage: scripts/type-names.py [--check] [SRC]
With --check, exit 1 when a name is defined twice (make test runs it)."""
import re
import sys
from collections import defaultdict
from pathlib import Path

DEF = re.compile(r"^\s*pub(\([^)]*\))?\s+(struct|enum|trait|type)\s+([A-Z]\w*)")


def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    root = Path(args[0] if args else "src")
    defs = defaultdict(list)
    for path in sorted(root.rglob("*.rs")):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            m = DEF.match(line)
            if m:
                defs[m.group(3)].append(f"{path}:{n}")
    twice = {name: where for name, where in defs.items() if len(where) > 1}
    for name in sorted(twice):
        print(f"{name}: {', '.join(twice[name])}")
    if not twice:
        print("every public type name has one meaning")
    return 1 if twice and "--check" in sys.argv else 0


if __name__ == "__main__":
    sys.exit(main())
