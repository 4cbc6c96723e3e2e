#!/usr/bin/env python3
"""Tokened downloads for Benchmarks/shared.sh: C client threads, each with keep-alive
connections to every target, fetch N attachment URLs spread round robin over the targets,
check every byte (SHA-256 against the file stored), and print one JSON line with the count,
errors, mismatches and latency percentiles.

  shared_downloads.py URLS_FILE TARGET,TARGET --requests 10000 --clients 16
URLS_FILE: lines "<path after the host>\t<sha256 hex>".
"""
import argparse
import hashlib
import http.client
import json
import threading
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("urls")
    ap.add_argument("targets")
    ap.add_argument("--requests", type=int, default=10000)
    ap.add_argument("--clients", type=int, default=16)
    args = ap.parse_args()
    items = [line.rstrip("\n").split("\t") for line in open(args.urls) if line.strip()]
    targets = [urllib.parse.urlsplit(t) for t in args.targets.split(",")]
    lock = threading.Lock()
    counter = [0]
    latencies, errors, mismatches = [], [0], [0]
    first = {}  # (path, port) -> latency of the first download of it from that replica

    def client(number):
        connections = {}
        while True:
            with lock:
                i = counter[0]
                if i >= args.requests:
                    return
                counter[0] += 1
            path, digest = items[i % len(items)]
            target = targets[i % len(targets)]
            start = time.perf_counter()
            body, status = b"", 0
            for _ in range(2):
                try:
                    connection = connections.get(target.port)
                    if connection is None:
                        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                        connections[target.port] = connection
                    connection.request("GET", path)
                    response = connection.getresponse()
                    body, status = response.read(), response.status
                    break
                except (http.client.HTTPException, ConnectionError, OSError):
                    connections.pop(target.port, None)
            seconds = time.perf_counter() - start
            with lock:
                if status != 200:
                    errors[0] += 1
                elif hashlib.sha256(body).hexdigest() != digest:
                    mismatches[0] += 1
                else:
                    latencies.append(seconds)
                    first.setdefault((path, target.port), seconds)

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall
    latencies.sort()
    pick = lambda p: round(latencies[min(len(latencies) - 1, int(p / 100 * (len(latencies) - 1)))] * 1000, 2)
    print(json.dumps({
        "requests": args.requests, "ok": len(latencies), "errors": errors[0], "mismatches": mismatches[0],
        "per_s": round(len(latencies) / wall, 1), "p50_ms": pick(50), "p99_ms": pick(99), "max_ms": pick(100),
        "first_per_replica_p50_ms": round(sorted(first.values())[len(first) // 2] * 1000, 2) if first else None,
        "first_per_replica_max_ms": round(max(first.values()) * 1000, 2) if first else None,
    }))


if __name__ == "__main__":
    main()
