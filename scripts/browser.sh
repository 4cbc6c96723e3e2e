#!/usr/bin/env bash
# Installs Debian's Chromium when it is missing: the batch report's tests draw the report with
# it (headless) at desktop and phone widths. Where it cannot be installed those tests are
# skipped and say so; nothing else needs it.
set -uo pipefail
for candidate in chromium chromium-browser google-chrome; do
    command -v "$candidate" >/dev/null && exit 0
done
if ! command -v apt-get >/dev/null; then
    echo "attache: no Chromium and no apt-get: the report's browser tests will be skipped" >&2
    exit 0
fi
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "attache: installing chromium (for the report's browser tests)" >&2
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    --no-install-recommends chromium >/dev/null; }; then
    echo "attache: chromium could not be installed: the report's browser tests will be skipped" >&2
fi
exit 0
