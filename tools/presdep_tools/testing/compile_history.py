"""Score fixed prompts through the compiled layers after a chosen history of compiled calls.

    python -m presdep_tools.testing.compile_history MODEL OUT.npz HISTORY

``HISTORY`` is a comma-separated list run before (and shaping) the scored calls: ``batch`` (two
equal prompts in one pass), ``grad`` (a forward in grad mode through the compiled layers),
``reverse`` (score the prompts in reverse order). The prompts: the readout tests' query over 1
and 4 passages, and a 12-passage prompt cut to lengths equal to the tiny model's hidden and
intermediate sizes (64, 128: where dynamo's duck sizing could give a length a graph of its
own). ``tests/readout/test_speed.py`` compares two processes with different histories bitwise.
"""

from __future__ import annotations

import sys
from dataclasses import replace

import numpy as np
import torch

from presentation_dependence.readout.backend import TransformersBackend
from presentation_dependence.readout.prompt import BuiltPrompt, PromptBuilder, get_template

QUERY = "how long is the life cycle of a flea"
TEXTS = (
    "The life cycle of a flea can last anywhere from 20 days to an entire year.",
    "Fleas lay eggs on the host; the eggs fall off into the environment.",
    "An unrelated passage about the history of the Roman empire and its roads.",
    "Cats and dogs are the most common hosts of the cat flea.",
)


def prompts(backend: TransformersBackend) -> tuple[dict[str, BuiltPrompt], tuple[int, ...]]:
    b = PromptBuilder(backend.tokenizer, get_template("pathc_grade_v1"), ("0", "1", "2", "3"))
    long = b.build(QUERY, list(TEXTS) * 3)
    out = {"one": b.build(QUERY, TEXTS[:1]), "four": b.build(QUERY, TEXTS)}
    for n in (64, 128):  # cut: the slots' readout positions kept inside the prompt
        out[f"cut{n}"] = replace(long, input_ids=long.input_ids[:n], grade_positions=(5, 9, n - 1))
    return out, b.grade_token_ids


def main(argv: list[str]) -> int:
    model, out, history = argv[0], argv[1], [h for h in argv[2].split(",") if h]
    torch.set_num_threads(1)
    backend = TransformersBackend.load(model, dtype="float32", device="cpu")
    named, ids = prompts(backend)
    if "batch" in history:
        backend.grade_probs([named["four"]] * 2, ids, batch_size=2, compile=True)
    if "grad" in history:
        backend.compiler.enable()
        with torch.enable_grad():
            backend.model(input_ids=torch.tensor([named["one"].input_ids]))
        backend.compiler.disable()
    order = list(named)[::-1] if "reverse" in history else list(named)
    scores = {}
    for name in order:
        probs, _ = backend.grade_probs([named[name]], ids, one_at_a_time=True, compile=True)
        scores[name] = probs[0]
    np.savez(out, **scores)  # type: ignore[arg-type]
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
