#!/usr/bin/env bash
# The prepared GPU check (issue 14): run it through the device tool when a GPU machine is lent,
#   bash scripts/device/gpu_check.sh          (writes $OUT/gpu_check.json, at most ~8 minutes)
# then copy the numbers into docs/BENCHMARKS.md with the date and the device.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-.}"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/nvidia-smi.csv" || true
timeout 480 python scripts/device/gpu_check.py --device cuda --dtype bfloat16 --out "$OUT/gpu_check.json"
cat "$OUT/gpu_check.json"
