#!/usr/bin/env python3
"""Every comparison of Benchmarks/ in one command (`bash Benchmarks/run.sh`, which runs this).

    bash Benchmarks/run.sh                      every comparison, once each
    bash Benchmarks/run.sh --only jpeg,service  some of them (names: --list)
    bash Benchmarks/run.sh --quick              each on a small subset (a few minutes)
    bash Benchmarks/run.sh --rounds 3           each step three times: a spread per figure
    bash Benchmarks/run.sh --compare A B        what moved between two results folders
    bash Benchmarks/run.sh --report DIR         the page of a results folder, made again

Each step is one of the scripts beside this file, run as a user would run it, with
BENCH_FIGURES naming the file its figures go to (figures.py) and BENCH_QUICK=1 for --quick. A
run writes Benchmarks/results/<date>-<host>[-quick]/: results.json (every figure, the peer's
from the same run, the ratio, the rounds and their spread; the machine; the versions), each
step's output in logs/, and report.html (report.py). A step that fails, or records fewer
figures than it promises, fails the run; a figure's value never does.
"""
import argparse
import datetime
import json
import os
import socket
import statistics
import subprocess
import sys
import time

import machine
import regress
import report

HERE = os.path.dirname(os.path.abspath(__file__))


class Step:
    def __init__(self, name, script, title, full, quick, figures):
        self.name, self.script, self.title = name, script, title
        self.estimate = {"full": full, "quick": quick}  # seconds on the 2-core machine, warm caches (quick: the debug build)
        self.figures = figures  # the figure names the step must record


STEPS = [
    Step("jpeg", "compare.sh", "JPEG and PNG photos -> 1024 px: vipsthumbnail, Pillow", 420, 30, [
        "JPEG photos -> 1024 px: throughput vs vipsthumbnail", "JPEG photos -> 1024 px: throughput vs pillow",
        "JPEG photos -> 1024 px: peak RSS", "JPEG photos -> 1024 px: output bytes", "JPEG photos -> 1024 px: mean PSNR",
        "PNG photos -> 1024 px: throughput vs vipsthumbnail", "PNG photos -> 1024 px: throughput vs pillow",
        "PNG photos -> 1024 px: output bytes", "48 MP baseline JPEG -> 1024 px: peak RSS"]),
    Step("gif", "gif.sh", "animated GIFs -> 480 and 320 px: gifsicle, Pillow", 240, 20, [
        "animated GIFs -> 480 px: throughput vs gifsicle", "animated GIFs -> 480 px: throughput vs pillow",
        "animated GIFs -> 480 px: mean PSNR", "a 60-frame 1200x675 GIF -> 480 px: peak RSS"]),
    Step("fetch", "fetch.sh", "200 KB fetches, 64 in flight: curl --parallel", 60, 5, [
        "200 KB fetches, 64 in flight, bodies saved: throughput", "200 KB fetches, 64 in flight, in memory: throughput"]),
    Step("webp", "webp.sh", "WebP photos -> 1024 px: vipsthumbnail", 60, 5, [
        "lossy WebP photos -> 1024 px: throughput", "lossless WebP photos -> 1024 px: throughput"]),
    Step("modern", "modern.sh", "HEIC, AVIF, JPEG XL photos -> 1024 px: vipsthumbnail", 150, 5, [
        "HEIC photos -> 1024 px: throughput", "AVIF photos -> 1024 px: throughput", "JPEG XL photos -> 1024 px: throughput"]),
    Step("colour", "colour.sh", "ICC-tagged JPEGs -> sRGB: vipsthumbnail", 120, 5, [
        "ICC-tagged JPEGs -> sRGB 1024 px: throughput", "ICC-tagged JPEGs: time of the conversion"]),
    Step("video", "video.sh", "posters, GIF -> MP4, transcodes: the ffmpeg CLI", 600, 10, [
        "a poster at 30.5 s of an H.264 MP4 -> 320 px: time", "animated GIFs -> H.264 MP4: time",
        "animated GIFs -> H.264 MP4: median MP4 / GIF bytes", "transcodes to H.264/AAC MP4 and AAC M4A: time"]),
    Step("quality", "quality.sh", "the defaults' pictures: thumbor, vipsthumbnail (SSIMULACRA2)", 900, 20, [
        "lomiri photos at the defaults: lowest SSIMULACRA2", "lomiri photos at the defaults: mean SSIMULACRA2",
        "lomiri photos at the defaults: bytes", "lomiri photos at the defaults: encodes per picture"]),
    Step("auto", "auto-cost.sh", "quality auto: the same first encode at a fixed quality", 120, 15, [
        "quality auto: CPU against one fixed encode"]),
    Step("service", "serve-load.sh", "the service under load: thumbor, nginx", 900, 35, [
        "service, 16 clients, 5-20 MP photos: throughput", "service, 16 clients, 5-20 MP photos: p99",
        "service: peak RSS through 64 clients", "service: tiny payloads beside 16 heavy clients, attached in 300 ms",
        "service: tiny payloads beside 16 heavy clients, p90", "service: tokened downloads, wrk -c 64"]),
    Step("batch", "batch.sh", "a campaign of media URLs: one worker", 600, 30, [
        "a campaign of media URLs: throughput, a worker per core", "a campaign: peak RSS, a worker per core",
        "a campaign killed and rerun: items recorded twice"]),
    Step("traces", "traces.sh", "the service with traces on: traces off", 420, 10, [
        "service with every request traced, 5-20 MP JPEGs: throughput",
        "service with every request traced, 128 px JPEG: throughput"]),
    Step("tenants", "tenant-cost.sh", "the service behind a tenants file: a plain key", 420, 5, [
        "service behind a tenants file: throughput"]),
    Step("downloads", "downloads.sh", "tokened downloads, directory and shared store: nginx from disk", 150, 15, [
        "tokened downloads, directory store, log level info (the default): throughput",
        "tokened downloads, directory store, log level warning: throughput",
        "tokened downloads, shared store, the replica's copy: throughput",
        "tokened downloads: CPU per request, directory store"]),
    Step("fanout", "fanout.sh", "a campaign's devices through an nginx edge: the origin alone", 300, 5, [
        "a campaign's devices through the edge: requests/s", "a campaign's devices through the edge: TTFB p99",
        "a campaign through the edge: origin downloads per object",
        "a campaign through the edge, the origin killed: device errors"]),
    Step("shared", "shared.sh", "two replicas of a shared store: one replica, one local directory", 420, 15, [
        "mutate through two replicas of a shared store: throughput", "downloads over two replicas, shared store: p99",
        "downloads over two replicas: errors and wrong bytes",
        "a campaign, two workers killed at random: items not done",
        "a campaign, two workers killed at random: most completions of one item"]),
    Step("connections", "connections.sh", "connections held by hostile clients, at the timeouts", 110, 15, [
        "payloads beside held idle and slowloris connections: attached",
        "payloads beside held idle and slowloris connections: slowest",
        "held idle and slowloris connections: closed by the timeouts",
        "at the descriptor limit: a payload on a fresh connection, answered in",
        "at the descriptor limit: a payload on an accepted connection attached"]),
    Step("isolation", "tenants.sh", "tenants under attack: B beside A's heavy load, at the defaults and with a file", 300, 50, [
        "tenant B beside A's 40 heavy connections, a tenants file: attached within 300 ms",
        "tenant B beside A's 40 heavy connections, a tenants file: p90",
        "tenant B beside A's 40 heavy connections, the defaults (two --api-keys): attached within 300 ms",
        "tenant B beside A's 40 heavy connections, the defaults (two --api-keys): p90",
        "tenant B beside C flooding past its rate: p99",
        "keys rotated under load: answers on the kept key not 200"]),
    Step("targets", "targets.sh", "Android, web and icon pictures, crops: vipsthumbnail's attention crop", 180, 5, [
        "photos -> iOS, Android, web and icon pictures: time", "Android pictures under a 40 KB cap",
        "Android pictures under a 40 KB cap: mean encodes", "2:1 crops of portraits: share of the subject kept",
        "collapsed iOS thumbnails of portraits: share of the subject kept"]),
    Step("faces", "faces.sh", "crops of faces above busy photos: vips attention, OpenCV's Haar cascade", 120, 10, [
        "2:1 crops of faces above busy photos, --faces: share of the face kept",
        "2:1 crops of faces above busy photos, attention: share of the face kept",
        "photos without a face, --faces: face placements", "photos -> three pictures with --faces: time"]),
    Step("startup", "startup.sh", "the process at start: vipsthumbnail", 40, 5, [
        "the process at start: --version, peak RSS", "the service idle after start: peak RSS"]),
]


def parse():
    ap = argparse.ArgumentParser(prog="bash Benchmarks/run.sh", description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", help="comma-separated step names (see --list)")
    ap.add_argument("--quick", action="store_true", help="each step on a small subset")
    ap.add_argument("--rounds", type=int, default=1, help="runs of each step (a spread needs two or more)")
    ap.add_argument("--debug-build", action="store_true",
                    help="measure the test build of scripts/build.sh (checks the scripts; its figures mean little)")
    ap.add_argument("--out", help="the results folder (default Benchmarks/results/<date>-<host>[-quick])")
    ap.add_argument("--slowdown", type=float, default=0,
                    help="make every attache command that many times slower (0.1: 10%%), to check --compare")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"), help="two results folders: what moved from A to B")
    ap.add_argument("--report", metavar="DIR", help="writes DIR/report.html from DIR/results.json")
    ap.add_argument("--list", action="store_true", help="the steps and their estimated times")
    return ap.parse_args()


def chosen(only):
    if not only:
        return STEPS
    names = [n.strip() for n in only.split(",") if n.strip()]
    unknown = [n for n in names if n not in {s.name for s in STEPS}]
    if unknown:
        sys.exit(f"run.sh: no step named {', '.join(unknown)}; the steps are {', '.join(s.name for s in STEPS)}")
    return [s for s in STEPS if s.name in names]


def minutes(seconds):
    seconds = int(round(seconds))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def previous_times(mode):
    """Each step's time in the newest earlier run of the same mode: a better estimate than the table's."""
    folder = os.path.join(HERE, "results")
    times = {}
    if not os.path.isdir(folder):
        return times
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name, "results.json")
        try:
            run = json.load(open(path))
        except (OSError, ValueError):
            continue
        if run.get("run", {}).get("mode") != mode:
            continue
        for step in run.get("steps", []):
            if step.get("status") == "ok" and step.get("rounds"):
                times[step["name"]] = step["seconds"] / step["rounds"]
    return times


def run_step(step, args, out, round_number):
    """Runs the step's script once; returns (seconds, figures, series, error)."""
    figures_path = os.path.join(out, "logs", f"{step.name}-{round_number}.figures.jsonl")
    log_path = os.path.join(out, "logs", f"{step.name}-{round_number}.txt")
    open(figures_path, "w").close()
    env = dict(os.environ, BENCH_FIGURES=figures_path, BENCH_QUICK="1" if args.quick else "0",
               BENCH_BUILD="debug" if args.debug_build else "release")
    if args.slowdown:
        env["BENCH_SLOWDOWN"] = str(args.slowdown)
    started = time.perf_counter()
    with open(log_path, "w") as log:
        code = subprocess.run(["bash", os.path.join(HERE, step.script)], stdout=log, stderr=subprocess.STDOUT,
                              env=env, cwd=HERE).returncode
    seconds = time.perf_counter() - started
    figures, series = [], []
    for line in open(figures_path):
        item = json.loads(line)
        (series if "series" in item else figures).append(item)
    error = None
    if code != 0:
        tail = open(log_path).read().splitlines()[-5:]
        error = f"{step.script} exited with {code}: " + " / ".join(tail)
    else:
        missing = [n for n in step.figures if n not in {f["name"] for f in figures}]
        if missing:
            error = f"{step.script} recorded no figure for: {'; '.join(missing)}"
    return seconds, figures, series, error


def spread(values):
    """(max - min) / median of a figure's rounds; None with one round."""
    if len(values) < 2:
        return None
    middle = statistics.median(values)
    return (max(values) - min(values)) / abs(middle) if middle else None


def merge(step, rounds):
    """One entry per figure name from a step's rounds: the median, every round, the spread."""
    merged = []
    names = list(dict.fromkeys(f["name"] for figures in rounds for f in figures))
    for name in names:
        seen = [f for figures in rounds for f in figures if f["name"] == name]
        first = seen[0]
        values = [f["value"] for f in seen]
        entry = {"step": step.name, "name": name, "unit": first["unit"], "better": first["better"],
                 "value": statistics.median(values), "values": values, "spread": spread(values)}
        if "peer" in first:
            peers = [f["peer_value"] for f in seen]
            ratios = [f["value"] / f["peer_value"] for f in seen if f["peer_value"]]
            entry.update(peer=first["peer"], peer_value=statistics.median(peers), peer_values=peers,
                         ratio=statistics.median(ratios) if ratios else None, ratios=ratios,
                         ratio_spread=spread(ratios))
        if "goal" in first:
            entry["goal"] = first["goal"]
            entry["goal_met"] = regress.goal_met(entry)
        merged.append(entry)
    return merged


def main():
    args = parse()
    if args.list:
        for s in STEPS:
            print(f"{s.name:9} {s.title}  (about {minutes(s.estimate['full'])}; --quick {minutes(s.estimate['quick'])})")
        return 0
    if args.compare:
        return regress.main(*args.compare)
    if args.report:
        report.write(args.report)
        print(os.path.join(args.report, "report.html"))
        return 0
    if args.rounds < 1:
        sys.exit("run.sh: --rounds takes 1 or more")
    steps = chosen(args.only)
    mode = "quick" if args.quick else "full"
    stamp = datetime.datetime.now(datetime.timezone.utc)
    out = args.out or os.path.join(HERE, "results", stamp.strftime("%Y-%m-%d-%H%M") + "-" + socket.gethostname()
                                   + ("-quick" if args.quick else ""))
    os.makedirs(os.path.join(out, "logs"), exist_ok=True)
    before = machine.describe()
    known = previous_times(mode)
    estimate = {s.name: known.get(s.name, s.estimate[mode]) * args.rounds for s in steps}
    print(f"run.sh: {len(steps)} steps ({mode}, {args.rounds} round{'s' if args.rounds > 1 else ''}), "
          f"about {minutes(sum(estimate.values()))}; results in {out}", flush=True)
    results = {"run": {"started": stamp.isoformat(timespec="seconds"), "mode": mode, "rounds": args.rounds,
                       "build": "debug" if args.debug_build else "release", "slowdown": args.slowdown,
                       "steps": [s.name for s in steps]},
               "machine": before, "versions": machine.versions(), "steps": [], "figures": [], "series": []}
    started, failed = time.perf_counter(), []
    for i, step in enumerate(steps):
        left = sum(estimate[s.name] for s in steps[i:])
        print(f"[{i + 1}/{len(steps)}] {step.name}: {step.title} (about {minutes(estimate[step.name])}, "
              f"{minutes(left)} left)", flush=True)
        rounds, series, seconds, error = [], [], 0.0, None
        for r in range(1, args.rounds + 1):
            took, figures, drawn, error = run_step(step, args, out, r)
            seconds += took
            if error:
                break
            rounds.append(figures)
            series = drawn  # the charts of the last round
        entry = {"name": step.name, "title": step.title, "script": step.script, "seconds": round(seconds, 1),
                 "rounds": len(rounds), "status": "failed" if error else "ok"}
        if error:
            entry["error"] = error
            failed.append(step.name)
            print(f"    FAILED after {minutes(seconds)}: {error} (log: logs/{step.name}-{len(rounds) + 1}.txt)", flush=True)
        else:
            merged = merge(step, rounds)
            results["figures"] += merged
            results["series"] += [dict(s, step=step.name) for s in series]
            print(f"    done in {minutes(seconds)}: {len(merged)} figures", flush=True)
        results["steps"].append(entry)
    results["run"]["seconds"] = round(time.perf_counter() - started, 1)
    results["run"]["finished"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    with open(os.path.join(out, "results.json"), "w") as sink:
        json.dump(results, sink, indent=1)
    report.write(out)
    print(f"run.sh: {len(steps) - len(failed)} of {len(steps)} steps done in {minutes(results['run']['seconds'])}; "
          f"{os.path.join(out, 'results.json')}, {os.path.join(out, 'report.html')}")
    print(report.summary_text(results))
    if failed:
        print(f"run.sh: failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
