#!/usr/bin/env python3
"""Devices after a campaign's send (Benchmarks/fanout.sh).

python3 fanout.py PAYLOADS.jsonl BASE HOST:PORT DEVICES CONCURRENCY

Each device is its own TCP connection to HOST:PORT: it takes payload `device % payloads`,
fetches every URL in it that begins with BASE (the attachment URLs: iOS, Android and web
pictures), one after the other on its keep-alive connection, reading each whole, and closes.
CONCURRENCY devices are active at once (a new one starts as one ends). Prints one JSON line:
devices, requests, errors (by kind), bytes, wall seconds, requests/s, and the time to first
byte of each request (p50, p99, max, in ms) and of each device's whole session.
"""
import asyncio
import json
import sys
import time


def urls_in(value, base, out):
    if isinstance(value, str):
        if value.startswith(base):
            out.append(value)
    elif isinstance(value, list):
        for item in value:
            urls_in(item, base, out)
    elif isinstance(value, dict):
        for item in value.values():
            urls_in(item, base, out)
    return out


def percentile(values, fraction):
    if not values:
        return None
    values = sorted(values)
    return values[min(len(values) - 1, int(fraction * len(values)))]


async def read_answer(reader, sent, stats):
    head = await reader.readuntil(b"\r\n\r\n")
    # The head comes in the answer's first segment: its arrival is the time to first byte.
    stats["ttfb"].append(time.perf_counter() - sent)
    lines = head.split(b"\r\n")
    status = int(lines[0].split()[1])
    length = 0
    for line in lines[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    if length:
        await reader.readexactly(length)
    return status, length


async def device(index, paths, host, port, stats):
    started = time.perf_counter()
    try:
        reader, writer = await asyncio.open_connection(host, port)
    except OSError as error:
        stats["errors"]["connect: " + type(error).__name__] = stats["errors"].get("connect: " + type(error).__name__, 0) + 1
        return
    try:
        for path in paths:
            sent = time.perf_counter()
            writer.write(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUser-Agent: device/{index}\r\n\r\n".encode())
            await writer.drain()
            status, length = await read_answer(reader, sent, stats)
            stats["requests"] += 1
            if status != 200:
                stats["errors"][f"status {status}"] = stats["errors"].get(f"status {status}", 0) + 1
            else:
                stats["bytes"] += length
        stats["sessions"].append(time.perf_counter() - started)
    except (OSError, asyncio.IncompleteReadError, ConnectionError, ValueError) as error:
        stats["errors"][type(error).__name__] = stats["errors"].get(type(error).__name__, 0) + 1
    finally:
        writer.close()


async def main():
    payloads_path, base, address, devices, concurrency = sys.argv[1:6]
    host, port = address.rsplit(":", 1)
    devices, concurrency = int(devices), int(concurrency)
    payloads = []
    with open(payloads_path) as f:
        for line in f:
            urls = urls_in(json.loads(line), base, [])
            # The path each URL names (the devices are told the host to ask).
            payloads.append(["/" + u.split("://", 1)[1].split("/", 1)[1] for u in urls])
    stats = {"requests": 0, "bytes": 0, "errors": {}, "ttfb": [], "sessions": []}
    queue = iter(range(devices))
    start = time.perf_counter()

    async def worker():
        for index in queue:
            await device(index, payloads[index % len(payloads)], host, int(port), stats)

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    wall = time.perf_counter() - start
    ms = lambda v: None if v is None else round(v * 1000, 1)
    print(json.dumps({
        "devices": devices, "concurrency": concurrency, "requests": stats["requests"],
        "errors": sum(stats["errors"].values()), "error_kinds": stats["errors"], "bytes": stats["bytes"],
        "wall_s": round(wall, 2), "requests_per_s": round(stats["requests"] / wall, 1),
        "ttfb_p50_ms": ms(percentile(stats["ttfb"], 0.5)), "ttfb_p99_ms": ms(percentile(stats["ttfb"], 0.99)),
        "ttfb_max_ms": ms(max(stats["ttfb"]) if stats["ttfb"] else None),
        "device_p99_ms": ms(percentile(stats["sessions"], 0.99)),
    }))


asyncio.run(main())
