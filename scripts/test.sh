#!/usr/bin/env bash
# Runs every test: the tree's checks, unit and lab tests with the race
# detector, image build tests, and the QEMU boot tests (legacy BIOS and
# UEFI). Installs what it needs first. Tests that need tools fail rather
# than skip here. Arguments (such as -v) go to go test.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
bash scripts/checks.sh
export PATH="${XDG_CACHE_HOME:-$HOME/.cache}/ncpos/bin:$PATH"
export NCPOS_REQUIRE_TOOLS=1 NCPOS_REQUIRE_QEMU=1 NCPOS_REQUIRE_LAB=1
cores=$(nproc)
# run shows each test command in the log before running it.
run() { echo "+ $*" >&2; "$@"; }

# Everything but the boot tests, with the race detector.
run go test -race -count=1 -timeout 40m -parallel "$cores" "$@" $(go list ./... | grep -v '/vm$')
echo "checks, unit and lab tests: ${SECONDS}s" >&2

# The boot tests run last, on their own: QEMU runs in software emulation
# and their timings leave no room for the lab's traffic tests beside
# them. One guest runs per core at once (vm/guests_test.go): every test
# starts at once (-parallel 64) and waits for a slot per guest, in the
# order of their expected length, longest first, the fleet test's long,
# mostly idle window before all. Their waits follow the guests' pace
# (vm/pace.go); a test that fails anyway is run again once, alone, and
# every such rerun is listed at the end, with its first failure.
events=$(mktemp --suffix=.json)
trap 'rm -f "$events"' EXIT
format=standard-quiet
for a in "$@"; do [ "$a" = -v ] && format=standard-verbose; done
rc=0
run gotestsum --format "$format" --hide-summary=output --jsonfile "$events" \
  --rerun-fails=1 --rerun-fails-max-failures=4 --packages ./vm -- \
  -race -count=1 -timeout 75m -parallel 64 "$@" || rc=$?
go run ./internal/reruns "$events"
echo "whole run: ${SECONDS}s" >&2
exit $rc
