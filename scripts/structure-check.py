#!/usr/bin/env python3
"""The re-seat's structural rules (issue 42), as checks a reviewer can rerun.

Each check lists what breaks its rule, file:line. The rules:

  use-cases      no use case (a `…Service` struct) stores another use case, outside the
                 GoTrue adapter (Compat/)
  whole-store    no file under GatehouseServer names the whole store (`GatehouseStore`,
                 `SQLStore`) but the composition root, the unit of work, migrations and backup
  wide-stores    no store protocol over 12 methods
  statuses       no `status:` argument whose value differs from its code's default status
                 (ErrorCode.defaultStatuses), except where docs/errors.md documents it
  plan-literals  no plan-state string literal in GatehouseClient or GatehouseVerifier
  route-tables   every route registered from a table (no path written at a `router.` call)
  file-length    no Swift file under Sources/ or Server/Sources/ over 400 lines

Usage: structure-check.py [--report] [CHECK...]
Without --report it exits 1 when any rule is broken; --report lists and counts without failing
(the re-seat is under way: see issue 42's note for what is left).
"""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
SERVER = ROOT / "Server" / "Sources" / "GatehouseServer"
STORE = ROOT / "Server" / "Sources" / "GatehouseStore"


def swift_files(*directories):
    for directory in directories:
        yield from sorted(directory.rglob("*.swift"))


def relative(path):
    return str(path.relative_to(ROOT))


def code_lines(path):
    """(line number, text) of a Swift file without `//` comments."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        stripped = line.strip()
        if stripped.startswith("//"):
            continue
        yield number, line


def use_cases():
    found = []
    for path in swift_files(SERVER):
        if "Compat" in path.parts:
            continue
        current = None
        for number, line in code_lines(path):
            declaration = re.match(r"\s*(?:public |final )*(?:struct|class|actor) (\w+Service)\b", line)
            if declaration:
                current = declaration.group(1)
            held = re.match(r"\s+(?:let|var) \w+: (?:any )?(\w+Service)\b", line)
            if current and held and held.group(1) != current:
                found.append(f"{relative(path)}:{number}: {current} holds {held.group(1)}")
    return found


WHOLE_STORE_ALLOWED = ("Composition/", "Services/Shared/UnitOfWork.swift", "OperatorBackup.swift")


def whole_store():
    found = []
    for path in swift_files(SERVER):
        name = relative(path)
        if any(allowed in name for allowed in WHOLE_STORE_ALLOWED):
            continue
        for number, line in code_lines(path):
            if line.lstrip().startswith("import "):
                continue
            if re.search(r"\b(?:any GatehouseStore|GatehouseStore\b(?!\.)|SQLStore)\b", line):
                found.append(f"{name}:{number}: {line.strip()[:100]}")
    return found


def wide_stores():
    found = []
    for path in swift_files(STORE):
        text = path.read_text()
        for match in re.finditer(r"public protocol (\w+Store)\b[^{]*\{(.*?)\n\}", text, re.S):
            methods = len(re.findall(r"^\s+func ", match.group(2), re.M))
            if methods > 12:
                number = text[: match.start()].count("\n") + 1
                found.append(f"{relative(path)}:{number}: {match.group(1)} has {methods} methods")
    return found


def statuses():
    table = (ROOT / "Sources" / "GatehouseWire" / "ErrorCode.swift").read_text()
    table = table[table.index("defaultStatuses"): table.index("public var defaultStatus")]
    defaults = {code: int(status) for code, status in re.findall(r"\.(\w+): (\d+)", table)}
    documented = (ROOT / "docs" / "errors.md").read_text()
    found = []
    for path in swift_files(SERVER, ROOT / "Sources"):
        for number, line in code_lines(path):
            for status, code in re.findall(r"status: (\d+), code: \.(\w+)", line):
                if defaults.get(code) != int(status):
                    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", code).lower().replace("i_d_", "id_")
                    note = " (documented)" if re.search(rf"{status}[^|\n]*`{snake}`|`{snake}`[^\n]*\b{status}\b", documented) else ""
                    if not note:
                        found.append(f"{relative(path)}:{number}: {code} answered {status}, its default is {defaults.get(code)}")
    return found


PLAN_NAMES = ("guest", "free", "trial", "pro", "pro_grace")


def plan_literals():
    found = []
    for path in swift_files(ROOT / "Sources" / "GatehouseClient", ROOT / "Sources" / "GatehouseVerifier"):
        for number, line in code_lines(path):
            if line.lstrip().startswith("///"):
                continue
            for literal in re.findall(r'"([a-z_]+)"', line):
                if literal in PLAN_NAMES:
                    found.append(f"{relative(path)}:{number}: \"{literal}\"")
    return found


def route_tables():
    found = []
    for path in swift_files(SERVER):
        for number, line in code_lines(path):
            if re.search(r"\.(?:get|post|put|patch|delete|head|on)\(\s*\"/", line):
                found.append(f"{relative(path)}:{number}: {line.strip()[:100]}")
    return found


def file_length():
    found = []
    for path in swift_files(ROOT / "Sources", ROOT / "Server" / "Sources"):
        lines = path.read_text().count("\n")
        if lines > 400:
            found.append(f"{relative(path)}: {lines} lines")
    return found


CHECKS = {
    "use-cases": use_cases, "whole-store": whole_store, "wide-stores": wide_stores, "statuses": statuses,
    "plan-literals": plan_literals, "route-tables": route_tables, "file-length": file_length,
}


def main():
    arguments = sys.argv[1:]
    report = "--report" in arguments
    names = [argument for argument in arguments if argument != "--report"] or list(CHECKS)
    broken = 0
    for name in names:
        found = CHECKS[name]()
        broken += len(found)
        print(f"{name}: {'ok' if not found else f'{len(found)} broken'}")
        for entry in found:
            print(f"  {entry}")
    if broken and not report:
        sys.exit(1)


if __name__ == "__main__":
    main()
