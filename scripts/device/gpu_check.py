"""A prepared accelerator check (issue 14): readout forward and an OC-SFT step at a real model size.

Self-contained on purpose (torch, transformers and peft only; no project import, no weights, no
network): it builds a causal LM with *random* weights from an architecture config, so it runs
on a lent GPU machine that has none of this project's files installed.

    python scripts/device/gpu_check.py --out results.json                 # Qwen3-4B shape, bf16, cuda
    python scripts/device/gpu_check.py --tiny --device cpu --out x.json   # seconds, for the tests

It measures, in one process:

* the device's bf16 (or the chosen dtype's) matmul rate: an N³ matmul timed after warm-up;
* the expected-grade readout forward: B = 20 passages of ~60 tokens behind a 200-token
  instruction (~1.4k tokens), logits kept at the 20 slot positions only; prompts/s, tokens/s,
  achieved TFLOP/s (2 · non-embedding parameters · tokens / time) as a fraction of the matmul
  rate, peak memory;
* one OC-SFT training step (LoRA r = 8 on q/k/v/o, two views of the same prompt, squared error
  plus the consistency term through the four-way grade softmax), tokens/s and peak memory;
* batched vs one-at-a-time numerics: the same prompts (passages of varying length) left-padded
  in one batch and run alone, max |ΔE[g]| over the slots.

``--shape`` picks the architecture (Qwen3-4B, the research's size; SmolLM2-135M, this project's
embedded model; tiny); ``--presentations M`` also scores M shuffles of one prompt (equal
lengths) one a pass and then as one unpadded batch (issue 39), speed-up and max |ΔE[g]|.

The switches of the project's CPU path (``readout/speed.py``): ``--attn-implementation``
(sdpa, the default, or eager) and ``--compile`` (every decoder layer through ``torch.compile``,
``dynamic=True``; the first pass of each kind compiles and is not timed).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path
from typing import Any

import torch

QWEN3_4B: dict[str, Any] = {
    "model_type": "qwen3",
    "hidden_size": 2560,
    "intermediate_size": 9728,
    "num_hidden_layers": 36,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "vocab_size": 151936,
    "max_position_embeddings": 40960,
    "rope_theta": 1000000.0,
    "tie_word_embeddings": True,
}
TINY: dict[str, Any] = {
    "model_type": "qwen3",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "head_dim": 16,
    "vocab_size": 512,
    "max_position_embeddings": 4096,
    "tie_word_embeddings": True,
}
SMOLLM2_135M: dict[str, Any] = {  # the project's embedded model (its GGUF's config)
    "model_type": "llama",
    "hidden_size": 576,
    "intermediate_size": 1536,
    "num_hidden_layers": 30,
    "num_attention_heads": 9,
    "num_key_value_heads": 3,
    "head_dim": 64,
    "vocab_size": 49152,
    "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5,
    "tie_word_embeddings": True,
}
SHAPES: dict[str, tuple[str, dict[str, Any]]] = {
    "qwen3-4b": ("Qwen3-4B (random weights)", QWEN3_4B),
    "smollm2-135m": ("SmolLM2-135M (random weights)", SMOLLM2_135M),
    "tiny": ("tiny qwen3", TINY),
}
GRADES = (15, 16, 17, 18)  # any four token ids stand in for the grade labels "0".."3"


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _peak_reset(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.reset_peak_memory_stats()


def _peak_gib(device: torch.device) -> float | None:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated() / 2**30
    return None


def matmul_rate(device: torch.device, dtype: torch.dtype, n: int, repeats: int) -> float:
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    for _ in range(2):
        a @ b
    _sync(device)
    t0 = time.perf_counter()
    for _ in range(repeats):
        a @ b
    _sync(device)
    return 2 * n**3 * repeats / (time.perf_counter() - t0)


def build_model(
    spec: dict[str, Any],
    device: torch.device,
    dtype: torch.dtype,
    attn_implementation: str = "sdpa",
    compile_layers: bool = False,
) -> Any:
    from transformers import AutoConfig, AutoModelForCausalLM

    config = AutoConfig.for_model(**spec)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(
        config, dtype=dtype, attn_implementation=attn_implementation
    )
    if compile_layers:  # as the project's LayerCompiler (readout/speed.py) does
        torch._dynamo.config.recompile_limit = max(torch._dynamo.config.recompile_limit, 64)
        for layer in model.model.layers:
            layer.compile(dynamic=True)
    return model.to(device).eval()


Blocks = tuple[list[int], list[list[int]]]


def make_blocks(gen: torch.Generator, vocab: int, slots: int, passage: int, head: int) -> Blocks:
    """The head (instruction + query) and the passages of one prompt, as token ids."""
    ids: list[int] = torch.randint(100, vocab, (head,), generator=gen).tolist()
    blocks = []
    for _ in range(slots):
        n = passage + int(torch.randint(-passage // 3, passage // 3 + 1, (1,), generator=gen))
        blocks.append(torch.randint(100, vocab, (max(1, n),), generator=gen).tolist())
    return ids, blocks


def assemble(head: list[int], blocks: list[list[int]]) -> tuple[list[int], list[int]]:
    """Token ids of one readout-shaped prompt and the positions whose logits are read."""
    ids = list(head)
    readout = []
    for block in blocks:
        ids += block
        readout.append(len(ids) - 1)  # the token before this slot's grade
        ids.append(GRADES[1])  # the filler
    return ids, readout


def make_prompt(
    gen: torch.Generator, vocab: int, slots: int, passage: int, head: int
) -> tuple[list[int], list[int]]:
    return assemble(*make_blocks(gen, vocab, slots, passage, head))


def presentations(
    gen: torch.Generator, blocks: Blocks, m: int
) -> list[tuple[list[int], list[int]]]:
    """M shuffles of one prompt's passages: equal lengths, so one batch needs no padding."""
    head, passages = blocks
    out = []
    for _ in range(m):
        order = torch.randperm(len(passages), generator=gen).tolist()
        out.append(assemble(head, [passages[i] for i in order]))
    return out


Batch = tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]


def batch_of(prompts: list[tuple[list[int], list[int]]], device: torch.device) -> Batch:
    width = max(len(p) for p, _ in prompts)
    ids = torch.zeros((len(prompts), width), dtype=torch.long)
    mask = torch.zeros_like(ids)
    readout = []
    for i, (p, r) in enumerate(prompts):
        pad = width - len(p)
        ids[i, pad:] = torch.tensor(p)
        mask[i, pad:] = 1
        readout.append([pad + x for x in r])
    pos = (mask.cumsum(-1) - 1).clamp(min=0)
    return ids.to(device), mask.to(device), pos.to(device), torch.tensor(readout, device=device)


def expected_grades(
    model: Any, ids: torch.Tensor, mask: torch.Tensor, pos: torch.Tensor, readout: torch.Tensor
) -> torch.Tensor:
    keep = torch.unique(readout)
    logits = model(
        input_ids=ids, attention_mask=mask, position_ids=pos, logits_to_keep=keep, use_cache=False
    ).logits
    col = torch.searchsorted(keep, readout)
    grade_ids = torch.tensor(GRADES, device=ids.device)
    g = logits.index_select(-1, grade_ids).gather(1, col.unsqueeze(-1).expand(-1, -1, 4))
    p = torch.softmax(g.float(), dim=-1)
    return p @ torch.arange(4.0, device=p.device)


def non_embedding_params(model: Any) -> int:
    emb = model.get_input_embeddings().weight.numel()
    return sum(p.numel() for p in model.parameters()) - emb


def presentations_batch(
    model: Any, device: torch.device, spec: dict[str, Any], args: argparse.Namespace
) -> dict[str, Any]:
    """M shuffles of one prompt scored one a pass, then as one unpadded batch (issue 39)."""
    gen = torch.Generator().manual_seed(1)
    blocks = make_blocks(
        gen, int(spec["vocab_size"]), args.slots, args.passage_tokens, args.head_tokens
    )
    views = presentations(gen, blocks, args.presentations)
    with torch.no_grad():
        expected_grades(model, *batch_of(views[:1], device))  # warm-up
        expected_grades(model, *batch_of(views, device))
        _sync(device)
        t0 = time.perf_counter()
        alone = [expected_grades(model, *batch_of([v], device))[0] for v in views]
        _sync(device)
        t_alone = time.perf_counter() - t0
        t0 = time.perf_counter()
        batched = expected_grades(model, *batch_of(views, device))
        _sync(device)
        t_batch = time.perf_counter() - t0
    diff = max(float((a - b).abs().max()) for a, b in zip(alone, batched, strict=True))
    return {
        "m": len(views),
        "tokens_per_prompt": len(views[0][0]),
        "one_a_pass_prompts_per_s": len(views) / t_alone,
        "one_batch_prompts_per_s": len(views) / t_batch,
        "speedup": t_alone / t_batch,
        "max_abs_diff": diff,
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    device = torch.device(args.device)
    dtype = getattr(torch, args.dtype)
    label, spec = SHAPES["tiny" if args.tiny else args.shape]
    out: dict[str, Any] = {
        "device": torch.cuda.get_device_name(0)
        if device.type == "cuda"
        else f"cpu ({platform.machine()}, {torch.get_num_threads()} threads)",
        "torch": torch.__version__,
        "dtype": args.dtype,
        "architecture": label,
        "attn_implementation": args.attn_implementation,
        "compiled_layers": args.compile,
    }
    import transformers

    out["transformers"] = transformers.__version__
    out["matmul_flops"] = matmul_rate(device, dtype, args.matmul_n, args.matmul_repeats)
    model = build_model(spec, device, dtype, args.attn_implementation, args.compile)
    n_params = non_embedding_params(model)
    out["non_embedding_parameters"] = n_params
    gen = torch.Generator().manual_seed(0)
    prompts = [
        make_prompt(gen, int(spec["vocab_size"]), args.slots, args.passage_tokens, args.head_tokens)
        for _ in range(args.prompts)
    ]
    tokens = sum(len(p) for p, _ in prompts)
    # readout forward, one prompt a pass (no padding waste)
    with torch.no_grad():
        expected_grades(model, *batch_of(prompts[:1], device))  # warm-up
        _sync(device)
        _peak_reset(device)
        t0 = time.perf_counter()
        alone = [expected_grades(model, *batch_of([p], device))[0] for p in prompts]
        _sync(device)
        secs = time.perf_counter() - t0
        batched = expected_grades(model, *batch_of(prompts, device))
    achieved = 2 * n_params * tokens / secs
    out["readout"] = {
        "prompts": len(prompts),
        "tokens_per_prompt": tokens / len(prompts),
        "prompts_per_s": len(prompts) / secs,
        "tokens_per_s": tokens / secs,
        "achieved_flops": achieved,
        "fraction_of_matmul": achieved / out["matmul_flops"],
        "peak_gib": _peak_gib(device),
    }
    diff = max(float((a - b).abs().max()) for a, b in zip(alone, batched, strict=True))
    out["batched_vs_alone_max_abs_diff"] = diff
    if args.presentations > 1:
        out["presentations"] = presentations_batch(model, device, spec, args)
    # one OC-SFT step: LoRA, two views (here: the prompt and a copy with the passages rotated)
    import peft

    model.train()
    lora = peft.get_peft_model(
        model,
        peft.LoraConfig(
            r=8, lora_alpha=16, target_modules=["q_proj", "k_proj", "v_proj", "o_proj"]
        ),
    )
    opt = torch.optim.AdamW([p for p in lora.parameters() if p.requires_grad], lr=1e-4)
    target = torch.rand(args.slots, device=device) * 3
    step_times = []
    _peak_reset(device)
    for _ in range(args.steps + 1):
        t0 = time.perf_counter()
        views = [prompts[0], prompts[1 % len(prompts)]]
        e = expected_grades(lora, *batch_of(views, device))
        fit = ((e - target) ** 2).mean()
        cons = ((e[0] - e[1]) ** 2).mean()
        (fit + cons).backward()
        opt.step()
        opt.zero_grad()
        _sync(device)
        step_times.append(time.perf_counter() - t0)
    step = sum(step_times[1:]) / len(step_times[1:])  # the first step warms up
    step_tokens = len(prompts[0][0]) + len(prompts[1 % len(prompts)][0])
    out["oc_sft_step"] = {
        "seconds": step,
        "tokens_per_s": step_tokens / step,
        "peak_gib": _peak_gib(device),
    }
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    p.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"])
    p.add_argument("--shape", default="qwen3-4b", choices=sorted(SHAPES))
    p.add_argument("--tiny", action="store_true", help="the tiny shape (CPU tests)")
    p.add_argument(
        "--presentations", type=int, default=0, help="M shuffles of one prompt, batched (0: off)"
    )
    p.add_argument("--prompts", type=int, default=8, help="readout prompts timed")
    p.add_argument("--slots", type=int, default=20, help="B: passages (grade slots) per prompt")
    p.add_argument("--passage-tokens", type=int, default=60)
    p.add_argument("--head-tokens", type=int, default=200, help="instruction + query tokens")
    p.add_argument("--steps", type=int, default=3, help="OC-SFT steps timed (after one warm-up)")
    p.add_argument("--matmul-n", type=int, default=8192)
    p.add_argument("--matmul-repeats", type=int, default=10)
    p.add_argument("--attn-implementation", default="sdpa", choices=["sdpa", "eager"])
    p.add_argument("--compile", action="store_true", help="torch.compile every decoder layer")
    p.add_argument("--out", help="write the JSON here (else print it)")
    args = p.parse_args(argv)
    result = run(args)
    text = json.dumps(result, indent=1)
    if args.out:
        Path(args.out).write_text(text + "\n", encoding="utf-8")
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
