"""A tiny randomly initialised causal LM for running trainers on CPU in seconds.

Its weights mean nothing: the tests look at what a trainer feeds it (input ids, labels) and that
a training step runs, never at what it learns.
"""

from __future__ import annotations

from typing import Any


def tiny_model(tokenizer: Any, *, seed: int = 0) -> Any:
    """A `Qwen2ForCausalLM` (2 layers, hidden 64, 2 heads, intermediate 128) over the tokenizer's whole
    vocabulary (`len(tokenizer)`, added tokens included), seeded, on CPU, in float32."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32768,
        tie_word_embeddings=True,  # half the parameters: the vocabulary is 129k
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    torch.manual_seed(seed)
    model = Qwen2ForCausalLM(config)
    return model.to("cpu", dtype=torch.float32)
