#!/usr/bin/env python3
"""Python's json on the inputs the JSON differential test gives it, one hex line each: prints
"accept" or "reject" and what Attache's stricter parser refuses on purpose (RFC 8259 SHOULD
and MUST NOT points Python lets through): dup (a repeated member name), surrogate (a lone
surrogate escape), nonfinite (NaN/Infinity), deep (nesting over 64), bom, big (over 1 MiB)."""
import json
import sys


def depth(value, level=1):
    if isinstance(value, dict):
        return max([level] + [depth(v, level + 1) for v in value.values()])
    if isinstance(value, list):
        return max([level] + [depth(v, level + 1) for v in value])
    return level


def strings(value):
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings(v)
    elif isinstance(value, str):
        yield value


for line in sys.stdin:
    data = bytes.fromhex(line.strip())
    flags = []
    dup = []

    def pairs(items):
        keys = [k for k, _ in items]
        if len(keys) != len(set(keys)):
            dup.append(True)
        return dict(items)

    def constant(name):
        flags.append("nonfinite")
        return float(name.replace("-", "")) if name != "NaN" else float("nan")

    try:
        value = json.loads(data, object_pairs_hook=pairs, parse_constant=constant)
        verdict = "accept"
    except (ValueError, RecursionError):
        print("reject")
        continue
    if dup:
        flags.append("dup")
    if any(0xD800 <= ord(c) <= 0xDFFF for s in strings(value) for c in s):
        flags.append("surrogate")
    try:
        if depth(value) > 64:
            flags.append("deep")
    except RecursionError:
        flags.append("deep")
    if data.startswith(b"\xef\xbb\xbf") or data.startswith(b"\xff\xfe") or data.startswith(b"\xfe\xff"):
        flags.append("bom")
    if len(data) > 1 << 20:
        flags.append("big")
    if not data.lstrip(b" \t\r\n").startswith((b"{", b"[", b'"', b"-", b"t", b"f", b"n", b"0", b"1", b"2", b"3", b"4", b"5", b"6", b"7", b"8", b"9", b"N", b"I")):
        flags.append("encoding")
    print(" ".join([verdict] + flags))
