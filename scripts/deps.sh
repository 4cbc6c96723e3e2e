#!/usr/bin/env bash
# Installs the system packages Attache builds against when they are missing (Debian/Ubuntu).
# Sourced by scripts/samples.sh and scripts/test.sh; safe to run again.
set -euo pipefail

packages=(pkg-config curl libcurl4-openssl-dev libgif-dev libpng-dev libjpeg-dev zlib1g-dev liblcms2-dev libwebp-dev libjxl-dev libavformat-dev libavcodec-dev libswscale-dev libavutil-dev libswresample-dev libsqlite3-dev libpq-dev libopencv-objdetect-dev libopencv-imgproc-dev libopencv-core-dev opencv-data iproute2)
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

# HEIC and AVIF: libheif 1.18 or later (1.15 cannot open many iOS 18 photos, and has neither
# tile-by-tile decoding, security limits nor cancellation), with its HEVC and AV1 decoders.
# Debian 12 carries 1.19 in bookworm-backports: the suite is added to apt's sources when missing.
heif_packages=(libheif-dev libheif-plugin-libde265 libheif-plugin-dav1d libheif-plugin-aomdec)
heif_version=$(dpkg-query -W -f='${Version}' libheif-dev 2>/dev/null || true)
heif_missing=()
if [ -z "$heif_version" ] || dpkg --compare-versions "$heif_version" lt 1.18; then
    heif_missing=("${heif_packages[@]}")
else
    for p in "${heif_packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || heif_missing+=("$p")
    done
fi

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
updated=""
if [ ${#heif_missing[@]} -gt 0 ]; then
    command -v apt-get >/dev/null || { echo "attache: libheif >= 1.18 is missing and there is no apt-get" >&2; exit 1; }
    suite=""
    codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
    if [ "$codename" = bookworm ]; then
        suite=bookworm-backports
        if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
            echo "attache: adding Debian's bookworm-backports suite to apt's sources (for libheif 1.19)" >&2
            printf 'Types: deb\nURIs: http://deb.debian.org/debian\nSuites: bookworm-backports\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' |
                $sudo tee /etc/apt/sources.list.d/bookworm-backports.sources >/dev/null
        fi
    fi
    echo "attache: installing ${heif_missing[*]}${suite:+ from $suite}" >&2
    $sudo apt-get update -qq
    updated=1
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends ${suite:+-t "$suite"} \
        "${heif_missing[@]}" >/dev/null
fi

if [ ${#missing[@]} -gt 0 ]; then
    if ! command -v apt-get >/dev/null; then
        echo "attache: missing system packages (${missing[*]}) and no apt-get to install them" >&2
        exit 1
    fi
    echo "attache: installing ${missing[*]}" >&2
    [ -n "$updated" ] || $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
