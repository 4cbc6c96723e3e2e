#!/usr/bin/env python3
"""The size limits the code keeps (run by scripts/format.sh in lint mode, so CI checks them):
every Swift, C and C++ file of Sources, Tests, Benchmarks and Fuzz at most 500 lines, every
function (a Swift `func` or `init` with a body, a C or C++ function) at most 80, from its
declaration's first line to its closing brace. Prints each that passes, and fails."""
import re
import subprocess
import sys

MAX_FILE, MAX_FUNCTION = 500, 80
SWIFT_FUNCTION = re.compile(
    r"^(\s*)(?:@\S+\s+)*(?:(?:public|package|internal|fileprivate|private|static|class|final|override|mutating"
    r"|nonisolated|convenience|required|async|@\w+(?:\([^)]*\))?)\s+)*(?:func\s+[^\s(<]+|init[?!]?)\s*[(<]"
)
C_FUNCTION = re.compile(r"^[A-Za-z_][^;#=]*\(")


def swift_functions(lines):
    for start, line in enumerate(lines):
        match = SWIFT_FUNCTION.match(line)
        if not match:
            continue
        indent = match.group(1)
        # The body's opening brace, unless another declaration or a blank line comes first (a
        # protocol's requirement has none).
        opening = next((i for i in range(start, len(lines)) if "{" in lines[i]), None)
        if opening is None or any(
            not lines[i].strip() or (lines[i].startswith(indent) and not lines[i][len(indent)].isspace()
                                     and not lines[i][len(indent)] in ")-")
            for i in range(start + 1, opening)):
            continue
        if lines[opening].count("{") == lines[opening].count("}"):
            continue  # a body on one line
        end = next((i for i in range(opening + 1, len(lines)) if lines[i].startswith(indent + "}")), None)
        if end is not None:
            yield start, end, line.strip()


def c_functions(lines):
    for start, line in enumerate(lines):
        if not C_FUNCTION.match(line) or line.startswith(("typedef", "struct", "enum", "union", "extern \"C\"")):
            continue
        opening = next((i for i in range(start, min(start + 8, len(lines))) if ";" in lines[i] or lines[i].rstrip().endswith("{")), None)
        if opening is None or ";" in lines[opening] or lines[opening].count("{") == lines[opening].count("}"):
            continue
        end = next((i for i in range(opening + 1, len(lines)) if lines[i].startswith("}")), None)
        if end is not None:
            yield start, end, line.strip()


files = subprocess.run(
    ["git", "ls-files", "Sources/*.swift", "Tests/*.swift", "Benchmarks/*.swift", "Fuzz/*.swift", "*.c", "*.h",
     "*.cpp"],
    capture_output=True, text=True, check=True).stdout.split()
problems = []
for path in files:
    lines = open(path, encoding="utf-8", errors="replace").read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) > MAX_FILE:
        problems.append(f"{path}: {len(lines)} lines (at most {MAX_FILE})")
    functions = swift_functions(lines) if path.endswith(".swift") else c_functions(lines)
    for start, end, declaration in functions:
        if end - start + 1 > MAX_FUNCTION:
            problems.append(f"{path}:{start + 1}: {end - start + 1} lines (at most {MAX_FUNCTION}): {declaration[:70]}")
for problem in problems:
    print("limits: " + problem, file=sys.stderr)
sys.exit(1 if problems else 0)
