"""A 2-layer random Llama (3.2M parameters) with the SmolLM2 tokenizer: the tests' and the
reliability harness's model for training and scoring in seconds, offline."""

from __future__ import annotations

from pathlib import Path

__all__ = ["make_tiny_model"]


def make_tiny_model(out_dir: Path, seed: int = 0) -> Path:
    """Save the tiny random model to ``out_dir`` (to load by path) and return it.

    Built offline from a config (weights drawn with ``seed``); ``initializer_range`` 0.3
    spreads the grade distributions out so that differences between presentations show.
    """
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    from presentation_dependence.models.embedded import load_embedded_tokenizer

    tok = load_embedded_tokenizer()
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=4096,
        tie_word_embeddings=True,
        initializer_range=0.3,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(seed)
    LlamaForCausalLM(config).save_pretrained(out_dir)
    tok.save_pretrained(out_dir)
    return out_dir
