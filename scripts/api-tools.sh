#!/usr/bin/env bash
# Makes schemathesis and openapi-spec-validator available to the service's conformance test, and
# opentelemetry-proto to the trace tests' OTLP receiver: a virtual environment in .build/tools (PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -x .build/tools/bin/schemathesis ] &&
    .build/tools/bin/python -c "import openapi_spec_validator, opentelemetry.proto" 2>/dev/null; then
    exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c "import ensurepip" 2>/dev/null; then
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo="sudo"
    echo "attache: installing python3-venv" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv python3-pip >/dev/null
fi
echo "attache: installing schemathesis, openapi-spec-validator and opentelemetry-proto into .build/tools" >&2
mkdir -p .build
python3 -m venv .build/tools
.build/tools/bin/pip install -q --disable-pip-version-check "schemathesis>=4,<5" "openapi-spec-validator>=0.7,<1" \
    "opentelemetry-proto>=1.27,<2" >&2
