#!/usr/bin/env bash
# Runs each fuzz target for N seconds (default 20) from the checked-in seeds.
# cargo-fuzz runs on the stable toolchain with --sanitizer none.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-20}"
if ! command -v cargo-fuzz >/dev/null 2>&1; then
    cargo install --quiet --locked cargo-fuzz
fi
corpus="$(mktemp -d)"
trap 'rm -rf "$corpus"' EXIT
cp fuzz/seeds/* "$corpus/"
cd fuzz
cargo fuzz run --sanitizer none frame_and_request "$corpus" -- -max_total_time="$seconds" 2>&1 | tail -n 3
