#!/usr/bin/env bash
# Same outputs before and after a refactoring (issue 15): run `presdep run --eval`, `psi` and `qa`
# on the tiny random test model with the code of BEFORE (a git revision, checked out in a
# worktree) and of this checkout, and compare every output file; then recompute metrics.json,
# psi/psi_metrics.json and qa/qa_metrics.json of existing run folders (copies) with both codes
# and compare those bytes. Writes WORK/identity.md and exits 1 when a compared file differs.
#
#   bash scripts/probes/identity_before_after.sh BEFORE WORK [RUN_FOLDER ...]
#
# Files that record an invocation rather than a result are not compared: provenance.json,
# run.log, .locks/, and the timing fields of the per-query records ("seconds", timings).
set -euo pipefail
BEFORE=${1:?a git revision}
WORK=${2:?a scratch folder}
shift 2
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-$ROOT/.venv/bin/python}
mkdir -p "$WORK"
WORK=$(cd "$WORK" && pwd)
[ -d "$WORK/before" ] || git -C "$ROOT" worktree add --detach "$WORK/before" "$BEFORE" >/dev/null
[ -d "$WORK/tiny" ] || (cd "$ROOT" && PYTHONPATH=$ROOT/tools "$PY" -c "
from pathlib import Path
from presdep_tools.testing.tiny_model import make_tiny_model
make_tiny_model(Path('$WORK/tiny'))")
HOTPOT=$ROOT/../shared/data/hotpotqa-distractor-dev500/hotpotqa_dev_distractor_500.ircot_format.jsonl

cat > "$WORK/reader.yaml" <<EOF
description: "tiny random model as the reader"
model_name: $WORK/tiny
dtype: float32
device: cpu
num_threads: 1
max_new_tokens: 8
seed: 0
max_passage_chars: 300
template: qa_short_v1
EOF
cat > "$WORK/rank.yaml" <<EOF
description: "identity check: NovelEval fixture (6 queries) x tiny model, B=10"
seed: 0
reranker: {reranker_class: GradeReranker, model_name: $WORK/tiny, chunk_size: 10, dtype: float32, device: cpu, num_threads: 1, max_passage_chars: 300}
data: {dataloader_class: FixtureLoader, path: $ROOT/fixtures/noveleval/noveleval.jsonl, top_k: 20, max_queries: 6}
eval: {measures: [ndcg@10, map, mrr], relevance_level: 1}
robustness: {perturbations: [random_shuffle, reverse, cyclic_shift], num_presentations: 3, null_repeats: 2, ndcg_k: 10, retain_top_k: 5, relevant_grade: 1}
EOF
cat > "$WORK/qa.yaml" <<EOF
description: "identity check: HotpotQA (5 questions) x tiny model, B=10, tiny reader"
seed: 0
reranker: {reranker_class: GradeReranker, model_name: $WORK/tiny, chunk_size: 10, dtype: float32, device: cpu, num_threads: 1, max_passage_chars: 300}
data: {dataloader_class: HotpotQALoader, path: $HOTPOT, top_k: 10, max_queries: 5}
eval: {measures: [ndcg@10], relevance_level: 1}
robustness: {perturbations: [random_shuffle], num_presentations: 3, null_repeats: 2, ndcg_k: 10, retain_top_k: 2, relevant_grade: 1}
qa: {reader: $WORK/reader.yaml, retain_top_k: 2, reader_order: first_stage, cache_answers: true}
EOF

presdep() {  # presdep SIDE ARGS...: the CLI of that side's code
  local src=$ROOT/src
  [ "$1" = before ] && src=$WORK/before/src
  shift
  # Both sides serve this checkout's shipped students (an older checkout may lack students/).
  (cd "$ROOT" && PYTHONPATH=$src PRESDEP_STUDENTS=$ROOT/students OMP_NUM_THREADS=1 "$PY" -c \
    'import sys; from presentation_dependence.cli import main; sys.exit(main(sys.argv[1:]))' "$@")
}

for side in before after; do
  out=$WORK/out-$side
  rm -rf "$out"
  presdep $side run "$WORK/rank.yaml" --run-dir "$out/rank" --eval >"$WORK/$side-run.log" 2>&1
  presdep $side psi "$WORK/rank.yaml" --run-dir "$out/rank" >>"$WORK/$side-run.log" 2>&1
  presdep $side run "$WORK/qa.yaml" --run-dir "$out/qa" >>"$WORK/$side-run.log" 2>&1
  presdep $side qa "$WORK/qa.yaml" --run-dir "$out/qa" >>"$WORK/$side-run.log" 2>&1
  n=0
  for folder in "$@"; do  # existing folders: recompute their metrics from stored results
    n=$((n + 1))
    copy=$out/existing-$n
    cp -r "$folder" "$copy"
    id=$(sed -n 's/^id: *//p' "$copy/resolved_config.yaml" | head -1)
    mkdir -p "$out/configs-$n"  # a config's file name must be its id
    cfg=$out/configs-$n/${id:-resolved_config}.yaml
    cp "$copy/resolved_config.yaml" "$cfg"
    [ -f "$copy/run.trec" ] && presdep $side eval --run-dir "$copy" >>"$WORK/$side-run.log" 2>&1
    [ -f "$copy/psi/grade_distributions.npz" ] &&
      presdep $side psi "$cfg" --run-dir "$copy" --from-scores >>"$WORK/$side-run.log" 2>&1
    [ -f "$copy/qa/qa_records.jsonl" ] &&
      presdep $side qa "$cfg" --run-dir "$copy" --from-records >>"$WORK/$side-run.log" 2>&1
    true
  done
done

"$PY" "$ROOT/scripts/probes/compare_outputs.py" "$WORK" "$BEFORE" "$@"
