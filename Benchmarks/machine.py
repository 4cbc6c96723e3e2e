"""What a benchmark run ran on: the machine before it and the versions of everything it measured."""
import os
import platform
import re
import subprocess


def _run(command):
    try:
        p = subprocess.run(command, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (p.stdout or p.stderr).strip()
    return text.splitlines()[0].strip() if text else None


def describe():
    """CPU model and flags, cores, memory, kernel and the load average, read before the run."""
    cpu = {}
    try:
        for line in open("/proc/cpuinfo"):
            key, _, value = line.partition(":")
            key = key.strip()
            if key in ("model name", "flags") and key not in cpu:
                cpu[key] = value.strip()
    except OSError:
        pass
    flags = cpu.get("flags", "").split()
    interesting = [f for f in ("sse4_2", "avx", "avx2", "avx512f", "fma", "bmi2", "neon", "asimd") if f in flags]
    memory = None
    try:
        memory = round(int(re.search(r"MemTotal:\s+(\d+)", open("/proc/meminfo").read()).group(1)) / 1024 / 1024, 1)
    except (OSError, AttributeError):
        pass
    load = None
    try:
        load = [float(x) for x in open("/proc/loadavg").read().split()[:3]]
    except OSError:
        pass
    return {"cpu": cpu.get("model name", platform.processor() or platform.machine()), "cpu_flags": interesting,
            "cores": os.cpu_count(), "memory_gib": memory, "kernel": platform.release(),
            "machine": platform.machine(), "os": _os(), "load_before": load}


def _os():
    try:
        values = dict(line.rstrip().split("=", 1) for line in open("/etc/os-release") if "=" in line)
        return values.get("PRETTY_NAME", "").strip('"')
    except OSError:
        return None


def _package(name):
    return _run(["dpkg-query", "-W", "-f=${Version}", name])


def _pip(name):
    text = subprocess.run(["python3", "-m", "pip", "show", name], capture_output=True, text=True).stdout
    match = re.search(r"^Version: (.+)$", text, re.M)
    return match.group(1) if match else None


def versions():
    """Attache's commit, Swift, the C libraries Attache links, and each peer."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    commit = _run(["git", "-C", root, "rev-parse", "HEAD"])
    dirty = subprocess.run(["git", "-C", root, "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    libraries = {}
    for package in ["libjpeg62-turbo", "libpng16-16", "libgif7", "libcurl4", "liblcms2-2", "libwebp7", "libheif1",
                    "libjxl0.7", "libavcodec59", "libavformat59", "zlib1g", "libsqlite3-0", "libpq5"]:
        version = _package(package)
        if version:
            libraries[package] = version
    peers = {
        "vipsthumbnail": _run(["vipsthumbnail", "--version"]),
        "thumbor": _pip("thumbor"),
        "Pillow": _pip("pillow"),
        "gifsicle": _run(["gifsicle", "--version"]),
        "curl": _run(["curl", "--version"]),
        "nginx": _run(["nginx", "-v"]),
        "wrk": _run(["wrk", "--version"]),
        "ffmpeg": _run(["ffmpeg", "-version"]),
        "ssimulacra2 (PyPI)": _pip("ssimulacra2"),
        "python": platform.python_version(),
    }
    return {"attache": (commit or "unknown") + (" (with uncommitted changes)" if dirty else ""),
            "swift": _run(["swift", "--version"]), "libraries": libraries,
            "peers": {k: v for k, v in peers.items() if v}}
