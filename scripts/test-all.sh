#!/usr/bin/env bash
# Runs every oncebox test. Installs what the tests need first: the reference
# Tarantool 2.6 (Debian's `tarantool` package), the Python connectors (into
# .venv), node.js and npm (for tests/node) and cargo-fuzz. Builds the release
# binary once and reuses it.
#
#   bash scripts/test-all.sh            everything
#   FUZZ_SECONDS=60 bash scripts/test-all.sh   a longer fuzz run
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n=== %s ===\n' "$*"; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

step "reference Tarantool 2.6"
if ! command -v tarantool >/dev/null 2>&1; then
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq tarantool >/dev/null
fi
tarantool --version | head -1

step "python clients"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv
fi
.venv/bin/pip install -q --disable-pip-version-check -r tests/python/requirements.txt

step "node.js (for the npm tarantool-driver test, which runs npm ci itself)"
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
    as_root apt-get update -qq
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq nodejs npm >/dev/null
fi
node --version

step "format and lints"
cargo fmt --check
cargo clippy --release --all-targets --quiet -- -D warnings

step "build"
cargo build --release --quiet

step "rust tests (unit and byte-level)"
cargo test --release --quiet

reports=target/reports
mkdir -p "$reports"

step "the tarantool-python connector's own test suite, oncebox standing in as tarantool"
.venv/bin/python tests/connector_suites/tarantool_python.py --min-pass 176 --json "$reports/tarantool_python_suite.json"

step "the asynctnt connector's own test suite, against Tarantool 2.6 and with oncebox standing in as tarantool"
.venv/bin/python tests/connector_suites/asynctnt_suite.py --min-pass 236 --json "$reports/asynctnt_suite.json"

step "the npm tarantool-driver's own test suite, its instances run by Tarantool 2.6 and by oncebox"
.venv/bin/python tests/connector_suites/node_driver_suite.py --min-pass 45 --json "$reports/node_driver_suite.json"

step "python tests (connectors, net.box, differential against Tarantool 2.6)"
ONCEBOX_BIN="$PWD/target/release/oncebox" .venv/bin/python -m pytest tests/python -q -p no:cacheprovider \
    --junitxml "$reports/pytest.xml"

step "conformance: re-record the goldens from the live Tarantool 2.6 (drift check)"
.venv/bin/python conformance/harness.py drift --bin tarantool

step "conformance: oncebox against the goldens, except the reviewed allow-list"
.venv/bin/python conformance/harness.py check --bin target/release/oncebox --out "$reports/conformance" \
    --results "$reports/conformance.json"

step "compatibility table (protocol-docs/compatibility.md)"
.venv/bin/python conformance/report.py --reports "$reports" --out protocol-docs/compatibility.md

step "fuzz smoke run"
bash scripts/fuzz-smoke.sh "${FUZZ_SECONDS:-20}"

step "all tests passed"
