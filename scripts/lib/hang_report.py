#!/usr/bin/env python3
"""What a test run that did not finish was doing: the tests that started and never ended, the
`hang report:` lines the tests printed (HangWatch: a request, an app's shutdown or a stand-in's
call that went on past its watch), and, from every thread's stack taken with gdb before the run
was stopped, the threads that were in the project's own code (a thread blocked there) or a note
that none was (every thread idle: an await that never resumes).

usage: hang_report.py LOG [STACKS]
"""
import re
import subprocess
import sys


def demangle(text):
    try:
        return subprocess.run(["swift", "demangle", "--simplified"], input=text, capture_output=True,
                              text=True, timeout=60).stdout or text
    except (OSError, subprocess.SubprocessError):
        return text


def main():
    log = open(sys.argv[1], errors="replace").read()
    started = set(re.findall(r"◇ Test (\S+?)\(", log))
    finished = set(re.findall(r"[✔✘] Test (\S+?)\(.*?(?:passed|failed) after", log))
    print("error: the test run did not finish within its limit; still running:",
          ", ".join(sorted(started - finished)) or "?")
    reports = [line for line in log.splitlines() if line.startswith("hang report:")]
    print("\n".join(reports[-40:]) if reports else "hang report: no watched wait went past its watch")
    if len(sys.argv) < 3:
        return
    stacks = open(sys.argv[2], errors="replace").read()
    if not stacks.strip():
        print("stacks: none taken (no gdb, or the process had ended)")
        return
    threads = [t for t in re.split(r"\n(?=Thread \d+ )", stacks) if t.startswith("Thread ")]
    # A frame of the project's own code: a Swift symbol of a Gatehouse module, or a source file
    # under Server/Sources or Server/Tests.
    ours = re.compile(r"\$s\d+Gatehouse|/Server/(?:Sources|Tests)/")
    held = [t for t in threads if ours.search(t)]
    print(f"stacks: {len(threads)} threads, {len(held)} with a frame of the project's code"
          + ("" if held else ": none blocked there, so an await never resumed"))
    for thread in held[:12]:
        lines = thread.splitlines()
        frames = [line for line in lines[1:] if line.startswith("#")]
        shown = frames[:3] + [line for line in frames[3:] if ours.search(line)][:8]
        print(lines[0])
        print("\n".join("  " + line[:400] for line in demangle("\n".join(shown)).splitlines()))


if __name__ == "__main__":
    main()
