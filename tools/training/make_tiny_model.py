"""Write a tiny random Clover-style checkpoint that the real loading path opens.

    python -m tools.training.make_tiny_model OUT --kind attention|hybrid [--peaked] [--layers N] [--hidden H]

The folder gets config.json, model.safetensors, a byte-level tokenizer (every UTF-8
byte is one token, so multi-byte characters really do split across tokens), a
Qwen-style chat template (tools, `<tool_call>`), and a `<|mask|>` token whose id is
also written as `config.mask_token_id`.

Random weights give flat output distributions: every denoise step would commit
only its top-1 position. `--peaked` scales the output head so confidences are high
and many positions pass the 0.95 threshold at once, as with a trained checkpoint.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]
# Markup tokens are plain added tokens, as in Qwen: they survive decoding into the reply text.
MARKUP_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>", "<think>", "</think>"]

CHAT_TEMPLATE = """\
{%- if tools %}<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}

{% endif %}# Tools

You may call one or more functions to assist with the user query.

You are provided with function signatures within <tools></tools> XML tags:
<tools>
{% for tool in tools %}{{ tool | tojson }}
{% endfor %}</tools>

For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:
<tool_call>
{"name": <function-name>, "arguments": <args-json-object>}
</tool_call><|im_end|>
{% elif messages[0].role == 'system' %}<|im_start|>system
{{ messages[0].content }}<|im_end|>
{% endif %}
{%- for m in messages %}
{%- if m.role == 'system' and loop.first %}
{%- elif m.role == 'tool' %}<|im_start|>user
<tool_response>
{{ m.content }}
</tool_response><|im_end|>
{% else %}<|im_start|>{{ m.role }}
{% if m.content %}{{ m.content }}{% endif %}
{%- for tc in m.tool_calls or [] %}
<tool_call>
{"name": "{{ tc.function.name }}", "arguments": {% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}{% endif %}}
</tool_call>
{%- endfor %}<|im_end|>
{% endif %}
{%- endfor %}
{%- if add_generation_prompt %}<|im_start|>assistant
{% endif %}"""  # noqa: E501  (the chat template's lines are the template's)

PEAK_SCALE = 200.0  # output-head gain for --peaked; large enough that most positions pass 0.95


def build_tokenizer(out: Path):
    """A byte-level BPE tokenizer without merges: 256 byte tokens plus the specials."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = pre_tokenizers.ByteLevel.alphabet()  # the 256 printable stand-ins for bytes
    vocab = {ch: i for i, ch in enumerate(sorted(alphabet))}
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.add_tokens(MARKUP_TOKENS)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                   mask_token="<|mask|>", chat_template=CHAT_TEMPLATE)
    fast.save_pretrained(out)
    return fast


def build_config(kind: str, vocab_size: int, *, layers: int, hidden: int, ids: dict[str, int]):
    common = dict(vocab_size=vocab_size, hidden_size=hidden, intermediate_size=hidden * 2,
                  num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
                  head_dim=hidden // 4, max_position_embeddings=32768, tie_word_embeddings=False,
                  eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"],
                  bos_token_id=None)
    if kind == "attention":
        from transformers import Qwen3Config
        config = Qwen3Config(**common)
    elif kind == "hybrid":
        from transformers import Qwen3_5TextConfig
        # 3 linear (Gated DeltaNet) layers to 1 full-attention layer, as in Clover.
        config = Qwen3_5TextConfig(**common, full_attention_interval=4, linear_conv_kernel_dim=4,
                                   linear_key_head_dim=hidden // 4, linear_value_head_dim=hidden // 4,
                                   linear_num_key_heads=2, linear_num_value_heads=4)
    else:
        raise SystemExit(f"unknown --kind {kind!r}; choose attention or hybrid")
    # Block-diffusion properties (see docs/checkpoints.md); written out so the folder says them.
    config.mask_token_id = ids["<|mask|>"]
    config.block_size = 32
    config.block_alignment = "prompt"
    config.logits_shift = 0
    config.prefix_attention = "causal"
    return config


def peak_output_head(model, tokenizer) -> None:
    """Scale the output head, and silence every row but printable ASCII (a zero row gives
    logit 0, far below the peaked maximum): readable text, no specials, no mask token."""
    import torch

    head = model.get_output_embeddings().weight  # [V, H]
    keep = torch.zeros(head.shape[0], dtype=torch.bool)
    for token_id in range(len(tokenizer)):
        text = tokenizer.decode([token_id])
        keep[token_id] = len(text) == 1 and ((text.isprintable() and text.isascii()) or text == "\n")
    with torch.no_grad():
        head.mul_(PEAK_SCALE).mul_(keep[:, None].to(head.dtype))


def make_tiny_model(out: str | Path, kind: str = "attention", *, peaked: bool = False, layers: int = 4,
                    hidden: int = 64, seed: int = 0) -> Path:
    """Build the checkpoint folder `out` and return its path."""
    import torch
    from transformers import AutoModelForCausalLM

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    tokenizer = build_tokenizer(out)
    ids = {t: tokenizer.convert_tokens_to_ids(t) for t in SPECIAL_TOKENS}
    vocab_size = (len(tokenizer) + 63) // 64 * 64  # round up, as real checkpoints do
    config = build_config(kind, vocab_size, layers=layers, hidden=hidden, ids=ids)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if peaked:
        peak_output_head(model, tokenizer)
    model.save_pretrained(out)
    (out / "clover_tiny.json").write_text(json.dumps({"kind": kind, "peaked": peaked, "seed": seed}) + "\n")
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out")
    p.add_argument("--kind", choices=["attention", "hybrid"], default="attention")
    p.add_argument("--peaked", action="store_true", help="scale the output head: many positions pass 0.95")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--seed", type=int, default=0)
    a = p.parse_args()
    path = make_tiny_model(a.out, a.kind, peaked=a.peaked, layers=a.layers, hidden=a.hidden, seed=a.seed)
    print(path)


if __name__ == "__main__":
    main()
