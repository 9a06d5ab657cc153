"""Loading a Clover checkpoint from a local folder, offline: config, tokenizer, weights.

Every failure is an EngineError that says what to check. The model hub is never reached
(HF_HUB_OFFLINE / TRANSFORMERS_OFFLINE, `local_files_only`).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.engine import CLOVER_CONTEXT_WINDOW, EngineError
from clover_code.engine.embedded.props import SUPPORTED_TYPES, CheckpointProps, checkpoint_kind, read_props

if TYPE_CHECKING:
    import torch
    from transformers import PretrainedConfig, PreTrainedModel, PreTrainedTokenizerBase

Progress = Callable[[float, str], None]  # (fraction 0..1, what is happening)


@dataclass(frozen=True)
class Checkpoint:
    """A loaded checkpoint, ready for a denoiser."""

    path: Path
    kind: str  # "attention" | "hybrid" (props.checkpoint_kind)
    props: CheckpointProps
    tokenizer: PreTrainedTokenizerBase
    weights: PreTrainedModel  # in eval mode, on `device`
    device: str
    context_window: int  # prompt plus reply, from the config
    stop_ids: frozenset[int]  # ids that end a reply


def check_folder(model: str | Path) -> Path:
    path = Path(model).expanduser()
    if not path.is_dir():
        raise EngineError(f"model folder not found: {path}")
    if not (path / "config.json").is_file():
        raise EngineError(f"{path} has no config.json; point --model at a checkpoint folder")
    return path


def load_checkpoint(model: str | Path, *, device: str | None = None, dtype: str | None = None,
                    progress: Progress = lambda fraction, message: None) -> Checkpoint:
    """Config, tokenizer and weights of the folder `model`; `progress` follows the load."""
    path = check_folder(model)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    progress(0.0, "importing torch and transformers")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # progress goes through `progress`, not tqdm on stderr
    progress(0.1, "reading config")
    try:
        config = AutoConfig.from_pretrained(path, local_files_only=True)
    except (ValueError, KeyError, OSError) as e:
        raise EngineError(f"cannot read {path / 'config.json'} ({str(e).splitlines()[0]}); "
                          f"supported model types: {', '.join(SUPPORTED_TYPES)}") from None
    kind = checkpoint_kind(config.model_type)
    progress(0.2, "loading tokenizer")
    try:
        tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    except (ValueError, OSError) as e:
        raise EngineError(f"cannot load the tokenizer from {path}: {str(e).splitlines()[0]}") from None
    props = read_props(config, tokenizer)
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    torch_dtype = resolve_dtype(dtype, device)
    progress(0.3, f"loading weights ({device}, {str(torch_dtype).removeprefix('torch.')})")
    weights = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch_dtype)
    weights = weights.to(device).eval()  # type: ignore[arg-type]  # transformers types .to() as taking a model
    window = getattr(config.get_text_config(), "max_position_embeddings", None) or CLOVER_CONTEXT_WINDOW
    return Checkpoint(path, kind, props, tokenizer, weights, device, window, stop_ids(config, weights, tokenizer))


def resolve_dtype(name: str | None, device: str) -> torch.dtype:
    """bfloat16 on a GPU, float32 on a CPU, unless `name` says otherwise."""
    import torch

    if name is None:
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    value = getattr(torch, name.removeprefix("torch."), None)
    if not isinstance(value, torch.dtype):
        raise EngineError(f"unknown dtype {name!r}; use bfloat16, float16 or float32")
    return value


def stop_ids(config: PretrainedConfig, weights: PreTrainedModel, tokenizer: PreTrainedTokenizerBase) -> frozenset[int]:
    """The configs' eos ids, and the chat template's end tokens the tokenizer knows."""
    ids: set[int] = set()
    for source in (config, config.get_text_config(), getattr(weights, "generation_config", None)):
        value = getattr(source, "eos_token_id", None) if source is not None else None
        ids.update(value if isinstance(value, (list, tuple)) else [value] if value is not None else [])
    for token in (tokenizer.eos_token, "<|im_end|>", "<|endoftext|>"):
        token_id = tokenizer.convert_tokens_to_ids(token) if token else None
        if isinstance(token_id, int) and token_id != tokenizer.unk_token_id:
            ids.add(token_id)
    return frozenset(ids)
