"""What a Clover-style checkpoint says about its decoding, and which model types are served.

Properties of a checkpoint, read from its config (the text config for multimodal
ones), with these defaults when absent:

| config key          | meaning                                                        | default  |
|---------------------|----------------------------------------------------------------|----------|
| `mask_token_id`     | the mask token; else the tokenizer's `mask_token`              | required |
| `block_size`        | tokens per block                                               | 32       |
| `block_alignment`   | `"prompt"`: blocks start at the prompt's end; `"absolute"`: at multiples of the block size (the first block is shortened to reach one) | `"prompt"` |
| `logits_shift`      | 0: logits at position i predict token i (LLaDA/SDAR style); 1: they predict token i+1 (Dream/Fast-dLLM style; the first position of a block is predicted by the last committed token) | 0 |
| `prefix_attention`  | `"causal"`: committed tokens are encoded causally; `"block"`: tokens of one committed block see each other both ways (LLaDA2/SDAR training) | `"causal"` |

With `prefix_attention="block"` the prompt is encoded in block-size chunks from its start
and each decoded block is a segment of its own (segments.py); `block_size` is the size the
engine decodes with (a `--block-size` override included), so chunks and blocks agree.
"""  # noqa: E501  (the table's rows are as wide as they are)

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from clover_code.engine import DEFAULT_BLOCK_SIZE, EngineError
from clover_code.jsonsafe import JSON

if TYPE_CHECKING:
    from transformers import PretrainedConfig, PreTrainedTokenizerBase

ATTENTION_TYPES = ("llama", "mistral", "qwen2", "qwen3", "qwen3_moe")
HYBRID_TYPES = ("qwen3_5", "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_5_text", "qwen3_next")
SUPPORTED_TYPES = ATTENTION_TYPES + HYBRID_TYPES


@dataclass(frozen=True)
class CheckpointProps:
    mask_token_id: int
    block_size: int = DEFAULT_BLOCK_SIZE
    block_alignment: str = "prompt"  # "prompt" | "absolute"
    logits_shift: int = 0  # 0 | 1
    prefix_attention: str = "causal"  # "causal" | "block"
    # The tools a checkpoint was trained to call (`clover_trained_tools` in config.json), when it
    # names them: a small model trained on one tool list loses its way when the prompt offers
    # others. None: any tool (Clover itself).
    trained_tools: tuple[str, ...] | None = None
    # The decoding policy measured best for this checkpoint (`clover_policy`, NAME[:KNOB]): the
    # engine's default when the user names neither a policy nor a threshold. None: the threshold
    # rule at 0.95, the model card's.
    policy: str | None = None


def checkpoint_kind(model_type: str) -> str:
    """"attention" or "hybrid"; EngineError naming the supported types otherwise."""
    if model_type in ATTENTION_TYPES:
        return "attention"
    if model_type in HYBRID_TYPES:
        return "hybrid"
    raise EngineError(f"unsupported model type {model_type!r}; supported: {', '.join(SUPPORTED_TYPES)}")


def read_props(config: PretrainedConfig, tokenizer: PreTrainedTokenizerBase | None = None) -> CheckpointProps:
    """The block-diffusion properties of a checkpoint, with the documented defaults."""
    def get(key: str, default: JSON = None) -> JSON:  # a value of config.json
        for cfg in (config, config.get_text_config()):
            value = getattr(cfg, key, None)
            if value is not None:
                return value
        return default

    mask = get("mask_token_id")
    if mask is None and tokenizer is not None:
        mask = tokenizer.mask_token_id
    if mask is None:
        raise EngineError("the checkpoint names no mask token: set `mask_token_id` in config.json "
                          "or a `mask_token` in the tokenizer")
    tools = get("clover_trained_tools")
    if tools is not None and not (isinstance(tools, list) and all(isinstance(n, str) for n in tools)):
        raise EngineError(f"config clover_trained_tools must be a list of tool names, not {tools!r}")
    policy = get("clover_policy")
    if policy is not None:
        from clover_code.engine.policies import PolicyError, parse_policy

        try:
            parse_policy(str(policy))
        except PolicyError as e:
            raise EngineError(f"config clover_policy: {e}") from None
    props = CheckpointProps(int(mask), int(get("block_size", DEFAULT_BLOCK_SIZE)),
                            str(get("block_alignment", "prompt")), int(get("logits_shift", 0)),
                            str(get("prefix_attention", "causal")),
                            tuple(tools) if tools is not None else None,
                            str(policy) if policy is not None else None)
    if props.block_alignment not in ("prompt", "absolute"):
        raise EngineError(f"config block_alignment must be 'prompt' or 'absolute', not {props.block_alignment!r}")
    if props.logits_shift not in (0, 1):
        raise EngineError(f"config logits_shift must be 0 or 1, not {props.logits_shift!r}")
    if props.prefix_attention not in ("causal", "block"):
        raise EngineError(f"config prefix_attention must be 'causal' or 'block', not {props.prefix_attention!r}")
    return props


def turn_mark_ids(tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    """Ids of the tokens that start a chat message (`<|im_start|>` in Qwen's template): a hybrid
    checkpoints its state before them, so an edited message resumes where it starts."""
    found = tokenizer.convert_tokens_to_ids("<|im_start|>")
    return frozenset([found]) if isinstance(found, int) and found != tokenizer.unk_token_id else frozenset()
