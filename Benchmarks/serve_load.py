#!/usr/bin/env python3
"""Closed-loop HTTP load for Benchmarks/serve-load.sh: C clients, each with its own keep-alive
connection, send requests one after another until N are done; prints one JSON line with
images/s, latency percentiles and status counts (and the latency of 503 answers apart).

  serve_load.py attache URL KEY MEDIA_BASE FILES_LIST --clients 16 --requests 96
  serve_load.py thumbor URL,URL,... - MEDIA_BASE FILES_LIST --clients 16 --requests 96
"""
import argparse
import http.client
import json
import sys
import threading
import time
import urllib.parse


def percentile(values, p):
    if not values:
        return None
    values = sorted(values)
    k = min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))
    return values[k]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kind", choices=["attache", "thumbor"])
    ap.add_argument("targets", help="service base URL(s), comma-separated (round robin per client)")
    ap.add_argument("key")
    ap.add_argument("media_base")
    ap.add_argument("files", help="file with one media path per line (relative to media_base)")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--requests", type=int, default=96)
    ap.add_argument("--tag", default="run", help="makes every media URL distinct from other runs")
    ap.add_argument("--retry-after", action="store_true",
                    help="a client answered 503 waits Retry-After seconds and sends the same request again")
    args = ap.parse_args()

    files = [line.strip() for line in open(args.files) if line.strip()]
    targets = [urllib.parse.urlsplit(t) for t in args.targets.split(",")]
    lock = threading.Lock()
    next_index = [0]
    results = []  # (status, seconds, attached)

    def take():
        with lock:
            i = next_index[0]
            if i >= args.requests:
                return None
            next_index[0] += 1
            return i

    def client(number):
        target = targets[number % len(targets)]
        connection = None
        i = None
        while True:
            i = take() if i is None else i
            if i is None:
                break
            media = f"{args.media_base}/{files[i % len(files)]}?{args.tag}={i}"
            if args.kind == "attache":
                body = json.dumps({"aps": {"alert": {"title": "t", "body": "b"}, "mutable-content": 1},
                                   "image": media}).encode()
                method, path = "POST", "/v1/notifications"
                headers = {"Authorization": "Bearer " + args.key, "Content-Type": "application/json"}
            else:
                body = None
                method, path = "GET", "/unsafe/fit-in/1024x1024/" + urllib.parse.quote(media, safe="")
                headers = {}
            start = time.perf_counter()
            for attempt in range(2):
                try:
                    if connection is None:
                        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=300)
                    connection.request(method, path, body=body, headers=headers)
                    response = connection.getresponse()
                    data = response.read()
                    status = response.status
                    attached = response.getheader("Attache-Attached")
                    retry_after = response.getheader("Retry-After")
                    break
                except (http.client.HTTPException, ConnectionError, OSError):
                    connection = None
                    status, attached, data, retry_after = 0, None, b"", None
            seconds = time.perf_counter() - start
            ok = status == 200 and (args.kind == "thumbor" or attached == "1") and len(data) > 0
            with lock:
                results.append((status, seconds, ok))
            if status == 503 and args.retry_after:
                time.sleep(float(retry_after or 1))
                continue
            i = None

    threads = [threading.Thread(target=client, args=(n,)) for n in range(args.clients)]
    wall = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - wall

    good = [s for status, s, ok in results if ok]
    refused = [s for status, s, ok in results if status == 503]
    statuses = {}
    for status, _, _ in results:
        statuses[str(status)] = statuses.get(str(status), 0) + 1
    print(json.dumps({
        "kind": args.kind, "clients": args.clients, "requests": len(results), "ok": len(good),
        "errors": len(results) - len(good) - len(refused), "refused": len(refused),
        "wall_s": round(wall, 2), "images_per_s": round(len(good) / wall, 2),
        "p50_s": percentile(good, 50), "p99_s": percentile(good, 99),
        "refused_p99_ms": None if not refused else round(percentile(refused, 99) * 1000, 2),
        "refused_max_ms": None if not refused else round(max(refused) * 1000, 2),
        "statuses": statuses,
    }))


if __name__ == "__main__":
    sys.exit(main())
