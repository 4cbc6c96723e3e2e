#!/usr/bin/env bash
# Writes Sources/attache/startup.order: the functions of a release `attache` that its start runs
# (`--version`, `serve` from start to ready, its first answers and its stop, one `resize`), one
# symbol per line, in the order they first run. The release link hands the file to lld
# (--symbol-ordering-file), which puts those functions side by side at the front of the code: a
# start then maps a few dense megabytes instead of a page (and the 64 KB the kernel maps around
# each fault) in every corner of the program. How: scripts/functrace.c, preloaded, sets a breakpoint on every function and
# records each the first time it runs. Symbols a build no longer has are skipped by the link, so
# an old file costs memory (and a linker warning per symbol), never a build; run this again
# after large changes.
#
# `scripts/startup-order.sh --check` (CI, a fraction of a second, no build): fails when the file
# names a type of this package that no longer exists where it says (a type moved to another
# target or renamed since the file was written: its functions would be left out of the order).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = --check ]; then
    grep '^\$s' Sources/attache/startup.order | swift demangle --compact | python3 -c '
import glob, re, sys

# Every Module.Type of this package the demangled names mention, and the types each target
# declares.
named = set()
for line in sys.stdin:
    named.update(re.findall(r"(?<![A-Za-z0-9_])(Attache[A-Za-z]*|attache)\.([A-Z][A-Za-z0-9_]*)", line))
declaration = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:(?:public|package|internal|fileprivate|private|final|indirect"
    r"|nonisolated)\s+)*(?:struct|class|enum|actor|protocol|typealias)\s+([A-Za-z_][A-Za-z0-9_]*)", re.M)
declared = {}
for module in {module for module, _ in named}:
    declared[module] = set()
    for path in glob.glob(f"Sources/{module}/**/*.swift", recursive=True):
        declared[module].update(declaration.findall(open(path).read()))
stale = sorted(f"{module}.{name}" for module, name in named if name not in declared[module])
if stale:
    listed = " ".join(stale)
    print(f"startup-order: Sources/attache/startup.order names {len(stale)} types this package no "
          f"longer has there: {listed}; run scripts/startup-order.sh", file=sys.stderr)
    sys.exit(1)
print(f"startup-order: the {len(named)} types Sources/attache/startup.order names are all where it says")
'
    exit
fi
tmp=$(mktemp -d)
trap 'kill "${service:-}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
# The build's output only when it fails (SwiftPM writes its errors to standard output).
bash scripts/release.sh --product attache >"$tmp/build.log" || { cat "$tmp/build.log" >&2; exit 1; }
bin=$(swift build -c release --show-bin-path)/attache
cc -O2 -shared -fPIC -o "$tmp/functrace.so" scripts/functrace.c
# The program's functions (address, name), read once: their addresses for the tracer, their names
# for the file.
readelf -sW "$bin" | awk '$4 == "FUNC" && $7 != "UND" {print $2, $8}' >"$tmp/functions"
cut -d' ' -f1 "$tmp/functions" >"$tmp/entries"
# The runtime's crash handler would take SIGTRAP from the tracer.
export SWIFT_BACKTRACE=enable=no
traced=(env FUNCTRACE_ENTRIES="$tmp/entries" FUNCTRACE_OUT="$tmp/run" LD_PRELOAD="$tmp/functrace.so")

"${traced[@]}" "$bin" --version >/dev/null

"${traced[@]}" ATTACHE_API_KEYS=startup-order-key-000000 "$bin" serve --port 0 --store "$tmp/store" \
    >"$tmp/serve.log" 2>&1 &
service=$!
for _ in $(seq 1 100); do
    grep -q listening "$tmp/serve.log" && break
    kill -0 "$service" 2>/dev/null || break
    sleep 0.1
done
grep -q listening "$tmp/serve.log" || { cat "$tmp/serve.log" >&2; exit 1; }
# Its first answers: a health check and a download's refusal (the connection's handlers, the
# download path's check).
port=$(grep -o 'listening on 127.0.0.1:[0-9]*' "$tmp/serve.log" | head -1 | cut -d: -f2)
curl -s -o /dev/null "http://127.0.0.1:$port/healthz"
curl -s -o /dev/null "http://127.0.0.1:$port/attachments/AAAAAAAAAAAAAAAAAAAAAA/$(printf '0%.0s' $(seq 64)).jpg"
sleep 2
kill -TERM "$service"
wait "$service"

"${traced[@]}" "$bin" resize --max-side 1024 --out "$tmp/resized" Samples/media/waterfall-rotated.jpg >/dev/null

# Each function once, where it first ran; every name of an address (aliases) beside it.
python3 - "$tmp/functions" "$tmp/run" >"$tmp/order" <<'EOF'
import sys

functions, run = sys.argv[1:3]
names = {}
for line in open(functions):
    address, name = line.split()
    names.setdefault(int(address, 16), []).append(name)
printed = set()
for line in open(run):
    for name in names.get(int(line, 16), []):
        if name not in printed:
            printed.add(name)
            print(name)
EOF
mv "$tmp/order" Sources/attache/startup.order
# The next release build links again with the new file (the link does not watch it).
rm -f "$bin"
echo "startup-order: $(wc -l <Sources/attache/startup.order) functions run at start, in Sources/attache/startup.order"
