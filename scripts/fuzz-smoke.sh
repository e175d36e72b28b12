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
xlog_corpus="$(mktemp -d)"
json_corpus="$(mktemp -d)"
trap 'rm -rf "$corpus" "$xlog_corpus" "$json_corpus"' EXIT
cp fuzz/seeds/* "$corpus/"
cp fuzz/seeds-xlog/* "$xlog_corpus/"
cp fuzz/seeds-json/* "$json_corpus/"
cd fuzz
cargo fuzz run --sanitizer none frame_and_request "$corpus" -- -max_total_time="$seconds" 2>&1 | tail -n 3
# Tarantool's log files (xlog.pairs, tarantoolctl cat): a shorter run.
cargo fuzz run --sanitizer none tarantool_xlog "$xlog_corpus" -- -max_total_time="$((seconds / 2 + 1))" 2>&1 | tail -n 3
# json.decode's reader: a shorter run.
cargo fuzz run --sanitizer none json_text "$json_corpus" -- -max_total_time="$((seconds / 4 + 1))" 2>&1 | tail -n 3
