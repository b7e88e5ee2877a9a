#!/usr/bin/env python3
"""Extracts the Swift blocks of a Markdown file into a consumer package's target, so the test
command builds what the docs show (issue 18).

Every ```swift block must be preceded by a marker line saying how it is compiled:

  <!-- compile: file -->        declarations as an app writes them in a file of its own
  <!-- compile: body -->        statements, compiled inside an `async throws` function
  <!-- compile: no (REASON) --> not compiled here (a manifest fragment, SwiftUI, AuthenticationServices):
                                listed when the script runs, never skipped silently

A block with no marker fails the run. Usage: doc-snippets.py DOC.md TARGET_DIRECTORY
"""
import pathlib
import re
import sys

MARKER = re.compile(r"<!--\s*compile:\s*(file|body|no)\s*(?:\((.*?)\))?\s*-->")


def blocks(text):
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        if lines[index].strip() == "```swift":
            start = index
            end = next(i for i in range(index + 1, len(lines)) if lines[i].strip() == "```")
            previous = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
            yield start + 1, MARKER.search(previous), "\n".join(lines[start + 1:end])
            index = end
        index += 1


def main():
    document, target = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2])
    for old in target.glob("Snippet_*.swift"):
        old.unlink()
    compiled, listed, unmarked = 0, [], []
    for line, marker, code in blocks(document.read_text()):
        name = f"Snippet_{line:04d}.swift"
        header = f"// Generated from {document} line {line} by scripts/doc-snippets.py: do not edit.\n"
        if marker is None:
            unmarked.append(line)
        elif marker.group(1) == "file":
            (target / name).write_text(header + code + "\n")
            compiled += 1
        elif marker.group(1) == "body":
            body = "\n".join("    " + row if row else row for row in code.splitlines())
            (target / name).write_text(
                header + "import Foundation\nimport GatehouseClient\n\n"
                f"func snippet{line}() async throws {{\n{body}\n}}\n")
            compiled += 1
        else:
            listed.append(f"line {line}: {marker.group(2) or 'no reason given'}")
    if unmarked:
        sys.exit(f"error: {document}: Swift blocks without a compile marker at lines {unmarked}")
    print(f"{document}: {compiled} Swift blocks extracted to {target}; not compiled on this platform:")
    for entry in listed:
        print(f"  {entry}")


if __name__ == "__main__":
    main()
