#!/usr/bin/env python3
"""A tiny payload beside heavy ones, for Benchmarks/serve-load.sh: C clients keep posting payloads
that each name a distinct 5-20 MP photo, while one more client posts N tiny payloads (a 128x96
JPEG, a distinct URL each) one after another, each with `?deadline=`; prints one JSON line with
the tiny payloads' answer times (p50, p90, p99, max) and how many were attached, and the heavy
clients' throughput meanwhile. The tiny client may use another API key (a second tenant).

  tiny_beside.py URL HEAVY_KEY TINY_KEY MEDIA_BASE FILES_LIST TINY_PATH --clients 16 --tiny 300
"""
import argparse
import http.client
import json
import threading
import time
import urllib.parse


def percentile(values, p):
    values = sorted(values)
    return values[min(len(values) - 1, max(0, int(round(p / 100 * (len(values) - 1)))))]


def post(connection, key, body, query=""):
    connection.request("POST", "/v1/notifications" + query, body=body,
                       headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    response = connection.getresponse()
    response.read()
    return response.status, response.getheader("Attache-Attached")


def payload(url):
    return json.dumps({"aps": {"alert": {"title": "t", "body": "b"}, "mutable-content": 1}, "image": url}).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("target")
    ap.add_argument("heavy_key")
    ap.add_argument("tiny_key")
    ap.add_argument("media_base")
    ap.add_argument("files")
    ap.add_argument("tiny_path")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--tiny", type=int, default=300)
    ap.add_argument("--deadline", default="300ms")
    ap.add_argument("--tag", default="tiny")
    ap.add_argument("--interval", type=float, default=0.02, help="seconds between two tiny payloads")
    ap.add_argument("--warm", type=float, default=5, help="seconds the heavy clients run first")
    ap.add_argument("--pace", type=float, default=0, help="requests a second per heavy client (0: as fast as it can)")
    args = ap.parse_args()
    target = urllib.parse.urlsplit(args.target)
    files = [line.strip() for line in open(args.files) if line.strip()]
    stop = threading.Event()
    heavy_done = [0]
    heavy_statuses = {}
    lock = threading.Lock()
    counter = [0]

    def heavy(number):
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=300)
        next_at = time.perf_counter()
        while not stop.is_set():
            if args.pace > 0:
                next_at += 1 / args.pace
                time.sleep(max(0, next_at - time.perf_counter()))
            with lock:
                i = counter[0]
                counter[0] += 1
            url = f"{args.media_base}/{files[i % len(files)]}?{args.tag}-heavy={i}"
            try:
                status, attached = post(connection, args.heavy_key, payload(url))
            except (http.client.HTTPException, OSError):
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=300)
                continue
            with lock:
                heavy_statuses[str(status)] = heavy_statuses.get(str(status), 0) + 1
                if status == 200 and attached == "1":
                    heavy_done[0] += 1

    threads = [threading.Thread(target=heavy, args=(n,), daemon=True) for n in range(args.clients)]
    for t in threads:
        t.start()
    time.sleep(args.warm)  # the heavy payloads fill the service first
    connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
    times, attached, statuses, attached_each = [], 0, {}, []
    started = time.perf_counter()
    heavy_before = heavy_done[0]
    with lock:
        heavy_sent_before = sum(heavy_statuses.values())
    for k in range(args.tiny):
        url = f"{args.media_base}/{args.tiny_path}?{args.tag}={k}"
        start = time.perf_counter()
        status, answer = post(connection, args.tiny_key, payload(url), "?deadline=" + args.deadline)
        times.append(time.perf_counter() - start)
        statuses[str(status)] = statuses.get(str(status), 0) + 1
        attached += answer == "1"
        attached_each.append(answer == "1")
        time.sleep(args.interval)
    wall = time.perf_counter() - started
    heavy_meanwhile = heavy_done[0] - heavy_before
    with lock:
        heavy_sent = sum(heavy_statuses.values()) - heavy_sent_before
    stop.set()
    ms = lambda s: round(s * 1000, 1)
    print(json.dumps({
        "clients": args.clients, "tiny": args.tiny, "deadline": args.deadline,
        "two_tenants": args.tiny_key != args.heavy_key, "attached": attached,
        "attached_share": round(attached / args.tiny, 4),
        "p50_ms": ms(percentile(times, 50)), "p90_ms": ms(percentile(times, 90)),
        "p99_ms": ms(percentile(times, 99)), "max_ms": ms(max(times)), "statuses": statuses,
        "within_300ms_attached": sum(1 for t, a in zip(times, attached_each) if a and t <= 0.3),
        "heavy_images_per_s": round(heavy_meanwhile / wall, 2), "heavy_statuses": heavy_statuses,
        "heavy_requests_per_s": round(heavy_sent / wall, 1),
    }))
    for t in threads:
        t.join(timeout=120)


if __name__ == "__main__":
    main()
