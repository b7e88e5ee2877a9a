#!/usr/bin/env python3
"""Extracts the Swift blocks of a Markdown file into a consumer package's target, so the test
command builds what the docs show (issue 18).

Every ```swift block must be preceded by a marker line saying how it is compiled:

  <!-- compile: file -->        declarations as an app writes them in a file of its own
  <!-- compile: body -->        statements, compiled inside an `async throws` function; the block's
                                own `import` lines go at the top of the file
  <!-- compile: no (REASON) --> not compiled here (a manifest fragment, SwiftUI, AuthenticationServices):
                                listed when the script runs, never skipped silently

Each block is compiled with exactly the imports it shows, nothing added (issue 41: a block that
needs `import Foundation` and does not show it must fail), each in a file of its own, with
MemberImportVisibility on in the consumer package.

A block with no marker fails the run. Usage: doc-snippets.py DOC.md... TARGET_DIRECTORY
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


def extract(document, target):
    compiled, listed, unmarked = 0, [], []
    for line, marker, code in blocks(document.read_text()):
        name = f"Snippet_{document.stem.replace('-', '_')}_{line:04d}.swift"
        header = f"// Generated from {document} line {line} by scripts/doc-snippets.py: do not edit.\n"
        if marker is None:
            unmarked.append(line)
        elif marker.group(1) == "file":
            (target / name).write_text(header + code + "\n")
            compiled += 1
        elif marker.group(1) == "body":
            rows = code.splitlines()
            imports = [row for row in rows if row.startswith("import ")]
            statements = [row for row in rows if not row.startswith("import ")]
            body = "\n".join("    " + row if row else row for row in statements)
            (target / name).write_text(
                header + "".join(f"{row}\n" for row in imports) + "\n"
                f"func snippet_{document.stem.replace('-', '_')}_{line}() async throws {{\n{body}\n}}\n")
            compiled += 1
        else:
            listed.append(f"line {line}: {marker.group(2) or 'no reason given'}")
    if unmarked:
        sys.exit(f"error: {document}: Swift blocks without a compile marker at lines {unmarked}")
    print(f"{document}: {compiled} Swift blocks extracted to {target}; not compiled on this platform:")
    for entry in listed:
        print(f"  {entry}")


def main():
    *documents, target = [pathlib.Path(argument) for argument in sys.argv[1:]]
    for old in target.glob("Snippet_*.swift"):
        old.unlink()
    for document in documents:
        extract(document, target)


if __name__ == "__main__":
    main()
