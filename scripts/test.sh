#!/usr/bin/env bash
# Runs every test: unit tests, image build tests, and the QEMU boot tests
# (legacy BIOS and UEFI). Installs what it needs first. Tests that need
# tools fail rather than skip here.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
export NCPOS_REQUIRE_TOOLS=1 NCPOS_REQUIRE_QEMU=1 NCPOS_REQUIRE_LAB=1
go vet ./...
go vet -tags ncpos_testimage ./appliance
test -z "$(gofmt -l $(git ls-files '*.go'))" || { echo "gofmt needed:"; gofmt -l $(git ls-files '*.go'); exit 1; }
# The boot tests run last, on their own: QEMU runs in software emulation
# on 2 cores, at most 3 VMs at once, and their timings leave no room for
# the lab's traffic tests beside them.
go test -count=1 -timeout 30m -parallel 3 "$@" $(go list ./... | grep -v '/vm$')
go test -count=1 -timeout 75m -parallel 3 "$@" ./vm
