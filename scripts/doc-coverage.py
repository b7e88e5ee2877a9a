#!/usr/bin/env python3
"""Fails when a public symbol of a module has no documentation comment (issue 41).

Reads the symbol graphs that DocC was built from (`MODULE.symbols.json` and the
`MODULE@OTHER.symbols.json` of its extensions to other modules) and lists every public or open
symbol that is written in the module's own sources (so it has a source location: what the
compiler synthesises, `==` or a Codable `init(from:)`, and what a protocol's extension gives, are
left to the protocol's own documentation) and has no `///` comment.

Usage: doc-coverage.py MODULE SYMBOL_GRAPH_DIRECTORY...
"""
import json
import pathlib
import sys


def main():
    module, directories = sys.argv[1], [pathlib.Path(d) for d in sys.argv[2:]]
    graphs = [path for directory in directories for path in directory.rglob("*.symbols.json")
              if path.name == f"{module}.symbols.json" or path.name.startswith(f"{module}@")]
    if not any(path.name == f"{module}.symbols.json" for path in graphs):
        sys.exit(f"error: no symbol graph of {module} under {', '.join(map(str, directories))}")
    seen, missing = set(), []
    for path in graphs:
        for symbol in json.loads(path.read_text())["symbols"]:
            if symbol["accessLevel"] not in ("public", "open") or "location" not in symbol:
                continue
            identifier = symbol["identifier"]["precise"]
            if identifier in seen:
                continue
            seen.add(identifier)
            if not (symbol.get("docComment") or {}).get("lines"):
                location = symbol["location"]
                file = location["uri"].split("/Sources/", 1)[-1]
                missing.append(f"Sources/{file}:{location['position']['line'] + 1}: {'.'.join(symbol['pathComponents'])}")
    if missing:
        print(f"error: {len(missing)} public symbols of {module} have no documentation comment:")
        for entry in sorted(missing):
            print(f"  {entry}")
        sys.exit(1)
    print(f"{module}: all {len(seen)} public symbols written in its sources are documented")


if __name__ == "__main__":
    main()
