"""EmbeddedEngine: a Clover checkpoint in this process, one committed block at a time.

Decoding runs in a worker thread (torch releases the GIL); every committed block and
every denoise step is handed to the asyncio loop with `call_soon_threadsafe`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import threading
import time
from pathlib import Path
from typing import Any, AsyncIterator, Callable

from clover_code.engine import (CLOVER_CONTEXT_WINDOW, DEFAULT_THRESHOLD, Block, ChatRequest, DenoiseStep,
                                EngineError, EngineInfo)
from clover_code.engine.partial_tags import partial_tag_length

Progress = Callable[[float, str], None]
_DONE = object()


def check_threshold(value: float) -> float:
    if not 0.0 < value <= 1.0:
        raise EngineError(f"threshold must be in (0, 1], got {value}")
    return value


class Detokenizer:
    """Incremental detokenizer: text is released only once its bytes are complete, so a
    multi-byte character split across blocks comes out whole."""

    def __init__(self, tokenizer, drop_ids: frozenset[int]):
        self.tokenizer, self.drop_ids = tokenizer, drop_ids
        self.window: list[int] = []  # ids since the last clean text boundary

    def push(self, ids: list[int]) -> str:
        self.window += [i for i in ids if i not in self.drop_ids]
        text = self.tokenizer.decode(self.window, skip_special_tokens=False)
        if text.endswith("\ufffd"):
            return ""  # an incomplete character: wait for its remaining bytes
        self.window = []
        return text

    def flush(self) -> str:
        text = self.tokenizer.decode(self.window, skip_special_tokens=False) if self.window else ""
        self.window = []
        return text


class StopStrings:
    """Holds back text that could be the start of a stop string; cuts at the first stop string."""

    def __init__(self, stops: tuple[str, ...]):
        self.stops = tuple(s for s in stops if s)
        self.held = ""

    def feed(self, text: str) -> tuple[str, bool]:
        """(text safe to emit, whether a stop string was hit)."""
        text = self.held + text
        cuts = [text.find(s) for s in self.stops if s in text]
        if cuts:
            self.held = ""
            return text[: min(cuts)], True
        keep = partial_tag_length(text, self.stops)
        self.held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep], False

    def flush(self) -> str:
        text, self.held = self.held, ""
        return text


class EmbeddedEngine:
    """Loads a Clover checkpoint from a local folder (offline) and streams blocks.

    Loading happens in the constructor and can take minutes for a large checkpoint: pass
    `on_progress=callable(fraction, message)` to follow it (called on the constructing
    thread, fraction from 0 to 1); a UI builds the engine in a worker thread.
    One request decodes at a time; a follow-up request whose prompt extends the previous
    one (conversation + reply) reuses the cached prefix and encodes only the new tokens.
    """

    def __init__(self, model: str | Path, *, threshold: float | None = None, block_size: int | None = None,
                 device: str | None = None, dtype: str | None = None, on_progress: Progress | None = None,
                 checkpoint_mb: float | None = None, prefix_cache_mb: float | None = None, **_: Any):
        progress = on_progress or (lambda fraction, message: None)
        self.threshold = check_threshold(threshold if threshold is not None else DEFAULT_THRESHOLD)
        if block_size is not None and block_size < 1:
            raise EngineError(f"block size must be >= 1, got {block_size}")
        path = Path(model).expanduser()
        if not path.is_dir():
            raise EngineError(f"model folder not found: {path}")
        if not (path / "config.json").is_file():
            raise EngineError(f"{path} has no config.json; point --model at a checkpoint folder")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")  # never reach for a model hub
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        progress(0.0, "importing torch and transformers")
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # progress goes through on_progress, not tqdm on stderr

        from clover_code.engine.denoisers import (SUPPORTED_TYPES, ModelDenoiser, checkpoint_kind, read_props,
                                                  state_budgets, turn_mark_ids)

        progress(0.1, "reading config")
        try:
            config = AutoConfig.from_pretrained(path, local_files_only=True)
        except (ValueError, KeyError, OSError) as e:
            raise EngineError(f"cannot read {path / 'config.json'} ({str(e).splitlines()[0]}); "
                              f"supported model types: {', '.join(SUPPORTED_TYPES)}") from None
        kind = checkpoint_kind(config.model_type)
        progress(0.2, "loading tokenizer")
        try:
            self.tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (ValueError, OSError) as e:
            raise EngineError(f"cannot load the tokenizer from {path}: {str(e).splitlines()[0]}") from None
        props = read_props(config, self.tokenizer)
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        torch_dtype = self._dtype(dtype, self.device)
        progress(0.3, f"loading weights ({self.device}, {str(torch_dtype).removeprefix('torch.')})")
        weights = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, dtype=torch_dtype)
        weights = weights.to(self.device).eval()
        self.block_size = block_size or props.block_size
        # one block size for decoding and for chunking a block-causal prefix
        self.denoiser = ModelDenoiser(weights, dataclasses.replace(props, block_size=self.block_size), kind,
                                      turn_marks=turn_mark_ids(self.tokenizer),
                                      **state_budgets(checkpoint_mb, prefix_cache_mb))
        self.kind = kind
        text_config = config.get_text_config()
        window = getattr(text_config, "max_position_embeddings", None) or CLOVER_CONTEXT_WINDOW
        self.info = EngineInfo("embedded", str(path), window, self.block_size, self.threshold)
        self.stop_ids = self._stop_ids(config, weights)
        self.reused_tokens = 0  # prompt tokens the last request found already encoded
        self.last_reuse = self.denoiser.last_reuse  # the last request's reused / encoded / source
        self._lock = threading.Lock()
        progress(1.0, "ready")

    # -- Engine protocol ---------------------------------------------------------------------
    def count_tokens(self, request: ChatRequest) -> int:
        return len(self._render(request))

    async def stream(self, request: ChatRequest) -> AsyncIterator[Block]:
        prompt = self._render(request)
        opts = self._options(request, len(prompt))
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue = asyncio.Queue()
        cancel = threading.Event()

        def call_in_loop(fn, arg) -> None:
            try:
                loop.call_soon_threadsafe(fn, arg)
            except RuntimeError:  # the consumer's loop is closed (its app exited mid-decode): stop
                cancel.set()

        def post(item) -> None:
            call_in_loop(queue.put_nowait, item)

        def forward_step(step: DenoiseStep) -> None:
            if not cancel.is_set():
                call_in_loop(request.on_step, step)

        # Without a listener the loop builds no per-step report at all.
        on_step = forward_step if request.on_step is not None else None

        def work() -> None:
            try:
                with self._lock:
                    for block in self._blocks(prompt, opts, request.stop, on_step, cancel):
                        post(block)
            except BaseException as e:  # handed to the consumer, raised there
                post(e)
            finally:
                post(_DONE)

        threading.Thread(target=work, name="clover-decode", daemon=True).start()
        try:
            while (item := await queue.get()) is not _DONE:
                if isinstance(item, BaseException):
                    raise item if isinstance(item, EngineError) else EngineError(f"decoding failed: {item}")
                yield item
        finally:
            cancel.set()  # the worker stops before its next forward pass

    async def aclose(self) -> None:
        def drop_state() -> None:
            with self._lock:  # waits for a decode still winding down
                self.denoiser.reset()

        await asyncio.to_thread(drop_state)

    # -- internals ---------------------------------------------------------------------------
    def _render(self, request: ChatRequest) -> list[int]:
        try:
            text = self.tokenizer.apply_chat_template(request.messages, tools=request.tools or None,
                                                      add_generation_prompt=True, tokenize=False)
        except Exception as e:  # jinja errors, missing template
            raise EngineError(f"cannot render the conversation with the checkpoint's chat template: {e}") from None
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _options(self, request: ChatRequest, prompt_len: int):
        from clover_code.engine.decoding import DecodeOptions

        room = self.info.context_window - prompt_len
        if room < 1:
            raise EngineError(f"the prompt is {prompt_len} tokens; the context window is "
                              f"{self.info.context_window} tokens (prompt plus reply)")
        threshold = check_threshold(request.threshold if request.threshold is not None else self.threshold)
        first = None
        if self.denoiser.props.block_alignment == "absolute" and prompt_len % self.block_size:
            first = self.block_size - prompt_len % self.block_size
        return DecodeOptions(mask_id=self.denoiser.props.mask_token_id, stop_ids=self.stop_ids,
                             block_size=self.block_size, first_block_size=first, threshold=threshold,
                             temperature=request.temperature, top_p=request.top_p,
                             max_tokens=max(1, min(request.max_tokens, room)), seed=request.seed)

    def _blocks(self, prompt: list[int], opts, stops: tuple[str, ...], on_step, cancel: threading.Event):
        """Decode on this (worker) thread, yielding `Block`s as they commit."""
        from clover_code.engine.decoding import decode_blocks

        start = time.perf_counter()
        try:
            pending = self.denoiser.reuse(prompt)
        except Exception:
            self.denoiser.reset()
            raise
        self.reused_tokens = len(prompt) - pending.shape[0]
        self.last_reuse = self.denoiser.last_reuse
        detok, stopper = Detokenizer(self.tokenizer, self.stop_ids), StopStrings(stops)
        results = decode_blocks(self.denoiser, pending, opts, on_step=on_step, cancelled=cancel.is_set)
        try:
            for result in results:
                text, hit = stopper.feed(detok.push(list(result.tokens)))
                finish = "stop" if hit else result.finish
                if finish:
                    text += "" if hit else stopper.feed(detok.flush())[0] + stopper.flush()
                yield Block(text=text, tokens=len(result.tokens), steps=result.steps,
                            at=time.perf_counter() - start, ms=result.ms, index=result.index, finish=finish,
                            prompt_tokens=len(prompt) if finish else None,
                            prompt_reused=self.last_reuse.reused if finish else None)
                if finish or cancel.is_set():
                    return
        except Exception:
            self.denoiser.reset()  # a failed forward pass may leave the cache half-written
            raise
        finally:
            results.close()

    @staticmethod
    def _dtype(name: str | None, device: str):
        import torch

        if name is None:
            return torch.bfloat16 if device.startswith("cuda") else torch.float32
        value = getattr(torch, name.removeprefix("torch."), None)
        if not isinstance(value, torch.dtype):
            raise EngineError(f"unknown dtype {name!r}; use bfloat16, float16 or float32")
        return value

    def _stop_ids(self, config, weights) -> frozenset[int]:
        ids: set[int] = set()
        for source in (config, config.get_text_config(), getattr(weights, "generation_config", None)):
            value = getattr(source, "eos_token_id", None) if source is not None else None
            ids.update(value if isinstance(value, (list, tuple)) else [value] if value is not None else [])
        for token in (self.tokenizer.eos_token, "<|im_end|>", "<|endoftext|>"):
            token_id = self.tokenizer.convert_tokens_to_ids(token) if token else None
            if isinstance(token_id, int) and token_id != self.tokenizer.unk_token_id:
                ids.add(token_id)
        return frozenset(ids)
