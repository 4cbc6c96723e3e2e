#!/usr/bin/env python3
"""The platform preview: how long `attache preview` takes, how large its page is, and how long
headless Chromium takes to load it (its navigation's loadEventEnd, read by a copy of the page
with a probe script and no policy) and to start, draw and screenshot it.

python3 preview.py --attache BIN --media DIR [--rounds N] [--screenshots DIR]
"""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile, time

CHROMIUM = next((c for c in ["/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome"]
                 if os.access(c, os.X_OK)), None)


def payloads(base):
    # FCM bodies, so that every platform has the picture: `notification.image` is every
    # platform's, and the APNs payload inside is mutable.
    def everywhere(title, body, name):
        return {"message": {"token": "t", "notification": {"title": title, "body": body, "image": f"{base}/{name}"},
                            "apns": {"payload": {"aps": {"mutable-content": 1}}}}}
    return {
        "portrait": everywhere("Falls at dawn", "A portrait: its collapsed square on the subject", "portrait-progressive.jpg"),
        "panorama": everywhere("The ridge", "A 5:1 panorama as every platform cuts it", "panorama.jpg"),
        "animated-gif": everywhere("Chi", "An animated GIF: its poster frame for the stills", "animated-chi.gif"),
        "three-pictures": {"message": {"token": "t", "notification": {"title": "Falls at dawn", "body": "Three pictures, one per platform"},
                                       "android": {"notification": {"image": f"{base}/waterfall-rotated.jpg"}},
                                       "apns": {"payload": {"aps": {"mutable-content": 1}}, "fcm_options": {"image": f"{base}/portrait-progressive.jpg"}},
                                       "webpush": {"headers": {"image": f"{base}/animated-chi.gif"}}}},
    }


def chromium(args, profile):
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
                           f"--user-data-dir={profile}"] + args, capture_output=True, text=True, timeout=120)


PROBE = """<div id="measure"></div><script>
addEventListener('load', () => setTimeout(() => {
  const n = performance.getEntriesByType('navigation')[0];
  document.getElementById('measure').textContent = 'load=' + n.loadEventEnd.toFixed(1);
}, 0));
</script>"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--attache", required=True)
    parser.add_argument("--base", required=True, help="where the media are served")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--screenshots")
    a = parser.parse_args()
    work = tempfile.mkdtemp(prefix="attache-preview-")
    rows = []
    for name, body in payloads(a.base).items():
        path = os.path.join(work, name + ".json")
        with open(path, "w") as f:
            json.dump(body, f)
        made, sizes = [], []
        page_path = os.path.join(work, name + ".html")
        for r in range(a.rounds):
            store = os.path.join(work, f"store-{name}-{r}")  # a fresh store: fetch, decode and all
            start = time.monotonic()
            subprocess.run([a.attache, "preview", "--allow-loopback", "--store", store, "--deadline", "30s", path,
                            "--out", page_path], check=True)
            made.append((time.monotonic() - start) * 1000)
        page = open(page_path).read()
        stage = int(re.search(r"stage=(\d+)", page).group(1))
        loads, shots = [], []
        if CHROMIUM:
            probe = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page).replace("</body>", PROBE + "</body>")
            probe_path = os.path.join(work, name + "-probe.html")
            open(probe_path, "w").write(probe)
            for r in range(a.rounds):
                out = chromium(["--dump-dom", f"--window-size=1240,{stage}", "file://" + probe_path],
                               os.path.join(work, f"profile-{r}")).stdout
                m = re.search(r'id="measure">load=([0-9.]+)', out)
                if m:
                    loads.append(float(m.group(1)))
                shot = os.path.join(work, f"{name}.png")
                start = time.monotonic()
                chromium([f"--screenshot={shot}", f"--window-size=1240,{stage}", "--force-device-scale-factor=1",
                          "file://" + page_path], os.path.join(work, f"profile-shot-{r}"))
                shots.append((time.monotonic() - start) * 1000)
            if a.screenshots:
                os.makedirs(a.screenshots, exist_ok=True)
                shutil.copy(os.path.join(work, f"{name}.png"), os.path.join(a.screenshots, f"preview-{name}.png"))
        med = lambda xs: statistics.median(xs) if xs else float("nan")
        rows.append((name, len(page.encode()), med(made), max(made), med(loads), max(loads) if loads else float("nan"),
                     med(shots)))
    print(f"| payload | page | attache preview (fresh store) median / max | Chromium load median / max | Chromium started, drawn, screenshot |")
    print("| --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r[0]} | {r[1] / 1000:.1f} KB | {r[2]:.0f} / {r[3]:.0f} ms | {r[4]:.0f} / {r[5]:.0f} ms | {r[6]:.0f} ms |")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
