#!/usr/bin/env bash
# Installs the system packages Attache builds against when they are missing (Debian/Ubuntu).
# Sourced by scripts/samples.sh and scripts/test.sh; safe to run again.
set -euo pipefail

packages=(pkg-config curl libcurl4-openssl-dev libgif-dev libpng-dev libjpeg-dev zlib1g-dev liblcms2-dev libwebp-dev libsqlite3-dev libpq-dev iproute2)
missing=()
for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# The JSON differential test runs Python's json beside the payload parser.
command -v python3 >/dev/null || missing+=(python3)
# libpng must carry Debian's security backports up to CVE-2026-46675 (1.6.39-2+deb12u6).
png_version=$(dpkg-query -W -f='${Version}' libpng16-16 2>/dev/null || true)
if [ -n "$png_version" ] && dpkg --compare-versions "$png_version" lt "1.6.39-2+deb12u6"; then
    missing+=(libpng16-16 libpng-dev)
fi

if [ ${#missing[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null; then
        echo "attache: missing system packages (${missing[*]}) and no apt-get to install them" >&2
        exit 1
    fi
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "attache: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
