#!/usr/bin/env bash
# Builds the image from the embedded default configuration and boots it in
# QEMU; the status page is then on https://127.0.0.1:8480/.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/deps.sh
go run ./cmd/ncpos build -o ncpos.img
exec go run ./cmd/ncpos vm "$@" ncpos.img
