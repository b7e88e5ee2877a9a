#!/usr/bin/env python3
"""The re-seat's structural rules (issue 42), as checks a reviewer can rerun.

Each check lists what breaks its rule, file:line. The rules:

  use-cases      no use case (a `…Service` struct) stores another use case, outside the
                 GoTrue adapter (Compat/)
  service-names  a type named `…Service` is a use case (UseCases/, Operator/, Compat/): shared
                 parts and infrastructure are named otherwise
  whole-store    no file under GatehouseServer names the whole store (`GatehouseStore`,
                 `SQLStore`) but the composition root, the unit of work, migrations and backup
  wide-stores    no store protocol over 12 methods
  statuses       no `status:` argument whose value differs from its code's default status
                 (ErrorCode.defaultStatuses), except where docs/errors.md documents it
  plan-literals  no plan-state string literal in GatehouseClient or GatehouseVerifier
  route-tables   every route registered from a table (`Endpoints`, `ConsoleRoutes`, `GoTrueRoutes`, `OAuthRoutes`,
                 `MetricsController.route`): no path or prefix written at a router call, and every
                 handler a named method (`use:`), not a closure
  file-length    no Swift file under Sources/ or Server/Sources/ over 400 lines
  doc-paths      every repository path docs/architecture.md names in backticks exists
  fact-writes    every store method that writes a row `SessionCache` keeps a copy of drops it:
                 users and sessions (`changed(`, but for a new row and `touchSession`), and the
                 tables an account's `AccountFacts` come from (`changed(.facts(…))`, each method a
                 case of `SessionCacheStoreTests.FactWrite`, the test that checks it does; issue 47)
  one-issuer     no file under GatehouseServer but Parts/SessionIssuer.swift writes a session row
                 (`insertSession(`): every door opens its sessions through the issuer (issue 60;
                 `SessionDoorTests` walks the doors)
  test-waits     no test waits for a child process or reads a pipe to its end on a Swift thread
                 (`waitUntilExit()`, `readDataToEndOfFile()`, `availableData`): the wait is in a
                 closure given to `OwnThread.run` (or a thread of its own), or the line above says
                 why it may block (`// Blocks its thread: …`). The test process has as many Swift
                 threads as cores, and a wait there held up the in-process servers (stop 84)

Usage: structure-check.py [--report] [CHECK...]
Without --report it exits 1 when any rule is broken (the test command runs it so); --report
lists and counts without failing.
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


USE_CASE_FOLDERS = ("UseCases", "Operator", "Compat")


def service_names():
    found = []
    for path in swift_files(SERVER):
        if any(folder in path.parts for folder in USE_CASE_FOLDERS):
            continue
        for number, line in code_lines(path):
            declaration = re.match(r"\s*(?:public |final )*(?:struct|class|actor|enum) (\w+Service)\b", line)
            if declaration:
                found.append(f"{relative(path)}:{number}: {declaration.group(1)} is not a use case but is named as one")
    return found


WHOLE_STORE_ALLOWED = ("Composition/", "Infrastructure/UnitOfWork.swift", "Operator/OperatorBackup.swift")


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


ROUTE_PATTERNS = (
    (r"\.(?:get|post|put|patch|delete|head|on)\(\s*\"", "a path written at the call"),
    (r"RouterPath\(\s*\"", "a path written at the call"),
    (r"\.group\(\s*(?:RouterPath\()?\"", "a prefix written at the call"),
    (r"\.(?:get|post|put|patch|delete|head)\s*(?:\(\s*\))?\s*\{\s*\w+,\s*\w+\s+in\b", "a route without a path"),
    (r"\.on\([^)]*\)\s*\{", "a handler that is a closure, not a named method"),
)


def route_tables():
    found = []
    for path in swift_files(SERVER):
        for number, line in code_lines(path):
            for pattern, what in ROUTE_PATTERNS:
                if re.search(pattern, line):
                    found.append(f"{relative(path)}:{number}: {what}: {line.strip()[:90]}")
                    break
    return found


def file_length():
    found = []
    for path in swift_files(ROOT / "Sources", ROOT / "Server" / "Sources"):
        lines = path.read_text().count("\n")
        if lines > 400:
            found.append(f"{relative(path)}: {lines} lines")
    return found


def doc_paths():
    found = []
    doc = ROOT / "docs" / "architecture.md"
    for number, line in enumerate(doc.read_text().splitlines(), 1):
        for text in re.findall(r"`([^`\s]+)`", line):
            if not re.match(r"^(?:Sources|Server|scripts|docs|benchmarks|Examples)/", text):
                continue
            candidates = [text]
            if "{" in text:
                head, _, rest = text.partition("{")
                options, _, tail = rest.partition("}")
                candidates = [head + option + tail for option in options.split(",")]
            for candidate in candidates:
                if not any(ROOT.glob(candidate.rstrip("/"))) and not (ROOT / candidate).exists():
                    found.append(f"docs/architecture.md:{number}: {candidate} does not exist")
    return found


FACT_TABLES = ("identities", "subscriptions", "stripe_subscriptions", "google_play_purchases", "plan_grants", "credit_ledger")
# The rows SessionCache keeps copies of besides the facts: every write drops them (changed(.session
# or .user)), but a new row (no copy of it can exist) and a session's last_active_at moving
# forward (a copy older there is only stricter; PostgreSQL's trigger skips it too).
CACHED_ROW_WRITE = re.compile(r"(?:INSERT INTO|UPDATE|DELETE FROM)\s+(users|sessions)\b")
NEW_OR_STRICTER = {"insertUser", "insertSession", "touchSession"}
FACT_WRITE = re.compile(r"(?:INSERT INTO|UPDATE|DELETE FROM)\s+(" + "|".join(FACT_TABLES) + r")\b")


def fact_writes():
    found = []
    test = ROOT / "Server" / "Tests" / "GatehouseStoreTests" / "SessionCacheStoreTests.swift"
    enum = re.search(r"enum FactWrite: CaseIterable \{(.*?)\n    \}", test.read_text(), re.S)
    cases = set(re.findall(r"\b(\w+)\b", re.sub(r"\bcase\b", " ", enum.group(1)))) if enum else set()
    for path in swift_files(STORE):
        name, start, body = None, 0, []

        def judge():
            text = "\n".join(body)
            kept = set(CACHED_ROW_WRITE.findall(text))
            if name and kept and "changed(" not in text and name not in NEW_OR_STRICTER:
                found.append(f"{relative(path)}:{start}: {name} writes {', '.join(sorted(kept))} without changed(...)")
            tables = set(FACT_WRITE.findall(text))
            if name and tables:
                if "changed(" not in text:
                    found.append(f"{relative(path)}:{start}: {name} writes {', '.join(sorted(tables))} without changed(.facts(...))")
                if name not in cases:
                    found.append(f"{relative(path)}:{start}: {name} writes {', '.join(sorted(tables))} but is not a case of FactWrite")

        for number, line in code_lines(path):
            declaration = re.match(r"\s*(?:public |private |fileprivate |static |@discardableResult )*func (\w+)", line)
            if declaration:
                judge()
                name, start, body = declaration.group(1), number, []
            body.append(line)
        judge()
    return found


def one_issuer():
    found = []
    issuer = SERVER / "Parts" / "SessionIssuer.swift"
    for path in swift_files(SERVER):
        if path == issuer:
            continue
        for number, line in code_lines(path):
            if "insertSession(" in line:
                found.append(f"{relative(path)}:{number}: a session row written beside SessionIssuer: {line.strip()[:90]}")
    return found


TESTS = ROOT / "Server" / "Tests"
WAITS = re.compile(r"(?<!func )\bwaitUntilExit\(\)|readDataToEndOfFile\(\)|\.availableData\b")
OWN_THREAD = re.compile(r"OwnThread\.run|onOwnThread|detachNewThread")


def test_waits():
    found = []
    for path in swift_files(TESTS):
        lines = path.read_text().splitlines()
        for index, line in enumerate(lines):
            if line.strip().startswith("//") or not WAITS.search(line):
                continue
            above = lines[max(0, index - 3):index]
            if any("Blocks its thread:" in before for before in above) or any(OWN_THREAD.search(before) for before in lines[max(0, index - 10):index + 1]):
                continue
            found.append(f"{relative(path)}:{index + 1}: a blocking wait on a Swift thread: {line.strip()[:90]}")
    return found


CHECKS = {
    "use-cases": use_cases, "service-names": service_names, "whole-store": whole_store, "wide-stores": wide_stores, "statuses": statuses,
    "plan-literals": plan_literals, "route-tables": route_tables, "file-length": file_length, "doc-paths": doc_paths,
    "fact-writes": fact_writes, "one-issuer": one_issuer, "test-waits": test_waits,
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
