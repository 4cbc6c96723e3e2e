#!/usr/bin/env python3
"""Key rotation under load, for Benchmarks/tenants.sh: C clients post small payloads (one image
each, a distinct URL) on three keys of one tenant's file: KEEP (stays valid throughout), OLD (taken
out) and NEW (added). After WARM seconds the tenants file is rewritten (OLD out, NEW in) and the
service gets SIGHUP; the run goes on for AFTER seconds. Prints one JSON line: the answers on KEEP
(and on NEW once it is in) that were not 200, how long after the signal OLD was first refused and
whether any 200 on OLD was answered later than 1 s after it, and when NEW was first accepted.

  rotation.py URL MEDIA_BASE IMAGE TENANTS_FILE NEW_FILE PID KEEP OLD NEW --clients 16
"""
import argparse
import http.client
import json
import os
import signal
import threading
import time
import urllib.parse


def main():
    ap = argparse.ArgumentParser()
    for name in ["target", "media_base", "image", "tenants_file", "new_file", "pid", "keep", "old", "new"]:
        ap.add_argument(name)
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--warm", type=float, default=5)
    ap.add_argument("--after", type=float, default=5)
    args = ap.parse_args()
    target = urllib.parse.urlsplit(args.target)
    stop = threading.Event()
    lock = threading.Lock()
    answers = []  # (key name, start, end, status)
    signalled = [None]

    def client(number):
        connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
        n = 0
        while not stop.is_set():
            n += 1
            name = ["keep", "old", "new"][(number + n) % 3]
            key = getattr(args, name)
            body = json.dumps({"aps": {"alert": "r", "mutable-content": 1},
                               "image": f"{args.media_base}/{args.image}?c={number}&n={n}"}).encode()
            start = time.monotonic()
            try:
                connection.request("POST", "/v1/notifications", body=body,
                                   headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
                response = connection.getresponse()
                response.read()
                status = response.status
            except (http.client.HTTPException, OSError):
                connection = http.client.HTTPConnection(target.hostname, target.port, timeout=60)
                status = 0
            with lock:
                answers.append((name, start, time.monotonic(), status))

    threads = [threading.Thread(target=client, args=(n,), daemon=True) for n in range(args.clients)]
    for t in threads:
        t.start()
    time.sleep(args.warm)
    os.replace(args.new_file, args.tenants_file)
    signalled[0] = time.monotonic()
    os.kill(int(args.pid), signal.SIGHUP)
    time.sleep(args.after)
    stop.set()
    for t in threads:
        t.join(timeout=60)
    at = signalled[0]
    keep = [a for a in answers if a[0] == "keep"]
    old = [a for a in answers if a[0] == "old"]
    new = [a for a in answers if a[0] == "new"]
    first_old_refused = min((a[2] for a in old if a[3] == 401 and a[1] >= at - 0.001), default=None)
    late_old_200 = [a for a in old if a[3] == 200 and a[1] > at + 1.0]
    first_new_ok = min((a[2] for a in new if a[3] == 200), default=None)
    new_after = [a for a in new if first_new_ok is not None and a[1] > first_new_ok]
    print(json.dumps({
        "clients": args.clients, "answers": len(answers),
        "keep": len(keep), "keep_not_200": sum(1 for a in keep if a[3] != 200),
        "new_after_first_200": len(new_after), "new_after_not_200": sum(1 for a in new_after if a[3] != 200),
        "old_refused_after_s": None if first_old_refused is None else round(first_old_refused - at, 3),
        "old_200_later_than_1s": len(late_old_200),
        "new_accepted_after_s": None if first_new_ok is None else round(first_new_ok - at, 3),
        "statuses": {name: {str(s): sum(1 for a in answers if a[0] == name and a[3] == s)
                            for s in sorted({a[3] for a in answers if a[0] == name})}
                     for name in ["keep", "old", "new"]},
    }))


if __name__ == "__main__":
    main()
