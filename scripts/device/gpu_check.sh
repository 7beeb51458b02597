#!/usr/bin/env bash
# The prepared GPU check (issues 14, 39): run it through the device tool when a GPU machine is lent,
#   bash scripts/device/gpu_check.sh
# It writes $OUT/gpu_check-<shape>.json (Qwen3-4B shape, then the embedded SmolLM2-135M shape at
# the content study's DL19 geometry) and $OUT/nvidia-smi.csv, in at most ~8 minutes; commit the
# files under docs/results/device/ and `presdep-bench --render-gpu` writes docs/BENCHMARKS.md's block.
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT="${OUT:-.}"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/nvidia-smi.csv" || true
timeout 240 python scripts/device/gpu_check.py --shape qwen3-4b --device cuda --dtype bfloat16 \
  --presentations 11 --out "$OUT/gpu_check-qwen3-4b.json"
# the study's geometry: DL19 prompts at B = 20 are ~2.3k tokens (passages cut to 300 characters)
timeout 200 python scripts/device/gpu_check.py --shape smollm2-135m --device cuda --dtype bfloat16 \
  --passage-tokens 100 --head-tokens 250 --prompts 16 --steps 5 --presentations 11 \
  --out "$OUT/gpu_check-smollm2-135m.json"
cat "$OUT"/gpu_check-*.json
