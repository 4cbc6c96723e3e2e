"""Held connections against `attache serve` (Benchmarks/connections.sh): idle, slowloris, and a
descriptor limit of 256. Prints one table per part. BENCH_QUICK=1: 300 + 300 connections for
12 s against head and idle timeouts of 3 and 4 s (the same mechanism on a shorter clock)."""
import http.server
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import figures

binary, media = sys.argv[1], sys.argv[2]
key = "benchmark-key-000000000000"


def serve_media():
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=media, **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server.server_address[1]


def start(extra=(), prefix=()):
    store = tempfile.mkdtemp(prefix="attache-connections-")
    log = open(store + "/serve.log", "w+")
    process = subprocess.Popen(
        list(prefix) + [binary, "serve", "--port", "0", "--store", store + "/store", "--api-keys", key,
                        "--allow-loopback"] + list(extra),
        stderr=log, stdout=subprocess.DEVNULL)
    for _ in range(200):
        log.seek(0)
        text = log.read()
        if "address=http://127.0.0.1:" in text:
            port = int(text.split("address=http://127.0.0.1:")[1].split("/")[0])
            return process, port, log
        time.sleep(0.05)
    raise SystemExit("the service did not start: " + text)


def descriptors(pid):
    return len(os.listdir(f"/proc/{pid}/fd"))


def rss_mb(pid):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def post(port, image, conn=None, timeout=30):
    """A payload naming `image`: the status and the seconds it took (None on no answer)."""
    body = json.dumps({"aps": {"alert": "x", "mutable-content": 1}, "image": image}).encode()
    head = (f"POST /v1/notifications HTTP/1.1\r\nHost: a\r\nAuthorization: Bearer {key}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n").encode()
    started = time.monotonic()
    try:
        sock = conn or socket.create_connection(("127.0.0.1", port), timeout=timeout)
        sock.settimeout(timeout)
        sock.sendall(head + body)
        answer = b""
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
        sock.close()
        status = int(answer.split(b" ")[1]) if answer.startswith(b"HTTP/") else 0
        return status, time.monotonic() - started
    except OSError:
        return 0, time.monotonic() - started


QUICK = figures.quick()
HELD = 300 if QUICK else 1000  # idle connections, and as many slowloris heads
RUN_S, SAMPLE_S = (12, 2) if QUICK else (90, 10)
TIMEOUTS = ["--head-timeout", "3s", "--idle-timeout", "4s"] if QUICK else []


def part_one(media_port):
    process, port, log = start(TIMEOUTS)
    image = f"http://127.0.0.1:{media_port}/waterfall-rotated.jpg"
    idle, slow = [], []
    for _ in range(HELD):
        idle.append(socket.create_connection(("127.0.0.1", port)))
    for _ in range(HELD):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"G")
        slow.append(s)
    head = b"ET /healthz HTTP/1.1\r\nHost: a\r\nX-Slow: " + b"a" * 100
    stop = threading.Event()

    def trickle():
        i = 0
        while not stop.wait(SAMPLE_S):
            for s in slow:
                try:
                    s.send(head[i:i + 1])
                except OSError:
                    pass
            i += 1

    threading.Thread(target=trickle, daemon=True).start()
    latencies, statuses, rows = [], [], []
    started = time.monotonic()
    next_sample = 0
    while time.monotonic() - started < RUN_S:
        status, seconds = post(port, image)
        statuses.append(status)
        latencies.append(seconds)
        elapsed = time.monotonic() - started
        if elapsed >= next_sample:
            closed = 0
            for s in idle + slow:
                try:
                    s.setblocking(False)
                    if s.recv(1, socket.MSG_PEEK) == b"":
                        closed += 1
                except BlockingIOError:
                    pass
                except OSError:
                    closed += 1
            rows.append((int(elapsed), descriptors(process.pid), rss_mb(process.pid), closed))
            next_sample += SAMPLE_S
        time.sleep(max(0, 1 - seconds))
    stop.set()
    print(f"{HELD:,} idle + {HELD:,} slowloris connections, "
          + ("head and idle timeouts of 3 and 4 s" if QUICK else "default timeouts (head 60s, idle 75s)"))
    print(f"| s | service descriptors | RSS MB | of the {2 * HELD:,} closed |")
    print("|---|---|---|---|")
    for row in rows:
        print(f"| {row[0]} | {row[1]} | {row[2]:.1f} | {row[3]} |")
    ok = [l for l, s in zip(latencies, statuses) if s == 200]
    print(f"payloads posted meanwhile: {len(statuses)}, attached {statuses.count(200)}, "
          f"median {statistics.median(ok) * 1000:.1f} ms, max {max(ok) * 1000:.1f} ms")
    timeouts = subprocess.run(["curl", "-s", f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True)
    for line in timeouts.stdout.splitlines():
        if line.startswith("attache_connection"):
            print("  " + line)
    figures.record("payloads beside held idle and slowloris connections: attached", 100 * len(ok) / len(statuses),
                   "%", goal=">= 100%")
    figures.record("payloads beside held idle and slowloris connections: slowest", max(ok) * 1000, "ms",
                   better="lower")
    figures.record("held idle and slowloris connections: closed by the timeouts", 100 * rows[-1][3] / (2 * HELD),
                   "%", goal=">= 100%")
    process.terminate()
    process.wait()


def part_two(media_port):
    process, port, log = start(["--max-concurrent", "8", "--max-queued", "8"], ["prlimit", "--nofile=256:256", "--"])
    image = f"http://127.0.0.1:{media_port}/waterfall-rotated.jpg"
    held = [socket.create_connection(("127.0.0.1", port)) for _ in range(240)]
    time.sleep(0.5)
    fresh, fresh_seconds = post(port, image)
    accepted = []
    for s in held:
        s.setblocking(False)
        try:
            s.recv(1, socket.MSG_PEEK)
        except BlockingIOError:
            accepted.append(s)
        except OSError:
            pass
    for s in accepted:
        s.setblocking(True)
    on_accepted, accepted_seconds = post(port, image, conn=accepted[0]) if accepted else (0, 0)
    log.seek(0)
    emfile = "Too many open files" in log.read()
    print()
    print("ulimit -n 256 (prlimit), 240 connections held")
    print("| what | answer | time |")
    print("|---|---|---|")
    print(f"| a payload on a fresh connection | {fresh} | {fresh_seconds * 1000:.1f} ms |")
    print(f"| a payload on one of the {len(accepted)} accepted connections | {on_accepted} | "
          f"{accepted_seconds * 1000:.1f} ms |")
    print(f"| service descriptors | {descriptors(process.pid)} of 256 | |")
    print(f"| 'Too many open files' in the log | {'yes' if emfile else 'no'} | |")
    figures.record("at the descriptor limit: a payload on a fresh connection, answered in", fresh_seconds * 1000, "ms",
                   better="lower")
    figures.record("at the descriptor limit: a payload on an accepted connection attached", 100 if on_accepted == 200 else 0,
                   "%", goal=">= 100%")
    process.terminate()
    process.wait()


media_port = serve_media()
part_one(media_port)
part_two(media_port)
