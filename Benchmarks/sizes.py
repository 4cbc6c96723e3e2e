"""Stored bytes against source bytes, per folder; see sizes.sh."""
import argparse, json, os, subprocess, tempfile

IMAGE = (".jpg", ".jpeg", ".png", ".gif")


def files(folder):
    out = []
    for dirpath, _, names in os.walk(folder):
        out += [os.path.join(dirpath, n) for n in sorted(names) if n.lower().endswith(IMAGE)]
    return sorted(out)


def resize(binary, paths):
    """`attache resize --json` over `paths`, one run per source directory (output names are
    the sources' names, which repeat across directories): {source path: result line}."""
    results = {}
    groups = {}
    for path in paths:
        groups.setdefault(os.path.dirname(path), []).append(path)
    for group in groups.values():
        with tempfile.TemporaryDirectory() as out:
            run = subprocess.run([binary, "resize", "--max-side", "1024", "--json", "--out", out] + group,
                                 capture_output=True, text=True)
            for line in run.stdout.splitlines():
                item = json.loads(line)
                if item.get("ok"):
                    item["data"] = open(item["output"], "rb").read()
                results[item["file"]] = item
    return results


def metadata(data):
    """What metadata an output carries, or ''."""
    found = []
    if data[:2] == b"\xff\xd8":
        i = 2
        while i + 4 <= len(data) and data[i] == 0xFF:
            marker, length = data[i + 1], int.from_bytes(data[i + 2:i + 4], "big")
            if marker == 0xDA:
                break
            if marker == 0xE1:
                found.append("EXIF/XMP")
            if marker == 0xFE:
                found.append("COM")
            i += 2 + length
    elif data[:8] == b"\x89PNG\r\n\x1a\n":
        i = 8
        while i + 8 <= len(data):
            length, kind = int.from_bytes(data[i:i + 4], "big"), data[i + 4:i + 8]
            if kind in (b"tEXt", b"zTXt", b"iTXt", b"eXIf", b"tIME"):
                found.append(kind.decode())
            i += 12 + length
    elif data[:3] == b"GIF":
        if b"\x21\xfe" in data and data.find(b"\x21\xfe") < len(data) - 2:
            pass  # a comment label can occur inside LZW data; checked by the stripper's tests
        if b"XMP DataXMP" in data:
            found.append("XMP")
    if b"GPS" in data[:65536] and data[:2] == b"\xff\xd8" and "EXIF/XMP" in found:
        found.append("GPS")
    return ",".join(sorted(set(found)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attache", required=True)
    parser.add_argument("--before")
    parser.add_argument("folders", nargs="+")
    args = parser.parse_args()
    print("| folder | images | source bytes | stored bytes | stored/source | larger than source | kept source |"
          " with metadata |" + (" before: stored bytes | saved vs before |" if args.before else ""))
    print("|---|---|---|---|---|---|---|---|" + ("---|---|" if args.before else ""))
    totals = [0, 0, 0, 0, 0, 0, 0]
    for folder in args.folders:
        paths = files(folder)
        if not paths:
            continue
        after = resize(args.attache, paths)
        before = resize(args.before, paths) if args.before else {}
        n = src = out = larger = kept = meta = old = 0
        for path in paths:
            item = after.get(path)
            if not item or not item.get("ok"):
                continue
            n += 1
            size = os.path.getsize(path)
            src += size
            out += len(item["data"])
            larger += len(item["data"]) > size
            kept += bool(item.get("kept_source"))
            found = metadata(item["data"])
            if found:
                meta += 1
                print(f"  {path}: {found}")
            if before.get(path, {}).get("ok"):
                old += len(before[path]["data"])
        row = f"| {folder} | {n} | {src} | {out} | {out / max(src, 1):.3f} | {larger} | {kept} | {meta} |"
        if args.before:
            row += f" {old} | {old - out} ({(old - out) / max(old, 1):.1%}) |"
        print(row)
        for k, v in enumerate([n, src, out, larger, kept, meta, old]):
            totals[k] += v
    n, src, out, larger, kept, meta, old = totals
    row = f"| all | {n} | {src} | {out} | {out / max(src, 1):.3f} | {larger} | {kept} | {meta} |"
    if args.before:
        row += f" {old} | {old - out} ({(old - out) / max(old, 1):.1%}) |"
    print(row)


if __name__ == "__main__":
    main()
