"""EmbeddedEngine: a Clover checkpoint in this process, one committed block at a time.

It composes one owner per job: loading.py reads the checkpoint, chat_template.py renders a
request, denoisers.py + decoding.py decode blocks, detokenizer.py and stop_strings.py turn
committed ids into the text a reader sees, and thread_bridge.py runs the decode on a worker
thread and hands each block (and each denoise step) to the asyncio loop. Per request, two
helpers may join the loop: the scaffold (scaffold.py: tool calls decoded under the grammar of
the request's tools; on by default when a request carries tools) and copy drafting
(drafting.py: n-gram drafts from the context; off by default, greedy requests only).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import AsyncGenerator, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from clover_code.engine import DEFAULT_THRESHOLD, Block, ChatRequest, DenoiseStep, EngineError, EngineInfo
from clover_code.engine.embedded.chat_template import ChatTemplate
from clover_code.engine.embedded.detokenizer import Detokenizer
from clover_code.engine.embedded.drafting import CopyDrafter, DraftStats
from clover_code.engine.embedded.loading import Progress, load_checkpoint
from clover_code.engine.embedded.stop_strings import StopStrings
from clover_code.engine.embedded.thread_bridge import Relay, ThreadBridge
from clover_code.engine.markup.scaffold import Grammars, Scaffold, ScaffoldStats
from clover_code.engine.policies import Policy, PolicyError, Threshold, parse_policy, policy_spec

if TYPE_CHECKING:
    import torch

    from clover_code.engine.embedded.decoding import DecodeOptions

StepListener = Callable[[DenoiseStep], None]
log = logging.getLogger("clover_code.engine")


@dataclass(frozen=True)
class HelperStats:
    """What the request's helpers did: None where a helper did not run."""

    scaffold: ScaffoldStats | None = None
    drafts: DraftStats | None = None


def check_threshold(value: float) -> float:
    if not 0.0 < value <= 1.0:
        raise EngineError(f"threshold must be in (0, 1], got {value}")
    return value


def check_policy(spec: str | None, threshold: float) -> Policy:
    """The policy a spec names (None: the threshold rule at `threshold`), or an EngineError."""
    try:
        return parse_policy(spec, threshold) if spec else Threshold(threshold)
    except PolicyError as e:
        raise EngineError(str(e)) from None


def _decode_error(e: BaseException) -> BaseException:
    return e if isinstance(e, EngineError) else EngineError(f"decoding failed: {e}")


class EmbeddedEngine:
    """Loads a Clover checkpoint from a local folder (offline) and streams blocks.

    Loading happens in the constructor and can take minutes for a large checkpoint: pass
    `on_progress=callable(fraction, message)` to follow it (called on the constructing
    thread, fraction from 0 to 1); a UI builds the engine in a worker thread.
    One request decodes at a time; a follow-up request whose prompt extends the previous
    one (conversation + reply) reuses the cached prefix and encodes only the new tokens.
    `checkpoint_mb` / `prefix_cache_mb` bound the hybrid state checkpoints and the cache of
    other conversations' prefixes (None: the defaults; 0: none kept). `scaffold=False` decodes
    tool calls as plain text (ids identical to the plain loop); `draft=True` turns copy drafting on.
    `policy` (`NAME[:KNOB]`, engine/policies.py) picks the positions a pass commits; None, or a
    bare `threshold`, is the threshold rule at `threshold`; `threshold:K` sets the threshold to K.
    With neither a policy nor a threshold, the checkpoint's own (`clover_policy` in its config)
    if it names one.
    A request's `policy` replaces the engine's; a request's `threshold` is the threshold rule's
    knob (and what a draft must reach) whatever the policy.
    """

    def __init__(self, model: str | Path, *, threshold: float | None = None, block_size: int | None = None,
                 device: str | None = None, dtype: str | None = None, on_progress: Progress | None = None,
                 checkpoint_mb: float | None = None, prefix_cache_mb: float | None = None,
                 scaffold: bool = True, draft: bool = False, policy: str | None = None):
        self.threshold = check_threshold(threshold if threshold is not None else DEFAULT_THRESHOLD)
        check_policy(policy, self.threshold)  # a bad name fails before minutes of loading
        if block_size is not None and block_size < 1:
            raise EngineError(f"block size must be >= 1, got {block_size}")
        progress = on_progress or (lambda fraction, message: None)
        checkpoint = load_checkpoint(model, device=device, dtype=dtype, progress=progress)
        if policy is None and threshold is None:  # the user named neither: the checkpoint's own, if any
            policy = checkpoint.props.policy
        self.policy = check_policy(policy, self.threshold)
        if isinstance(self.policy, Threshold):  # the threshold rule's knob is the threshold, drafts' too
            self.threshold = self.policy.knob
        from clover_code.engine.embedded.denoisers import ModelDenoiser, state_budgets
        from clover_code.engine.embedded.props import turn_mark_ids

        self.tokenizer, self.device, self.kind = checkpoint.tokenizer, checkpoint.device, checkpoint.kind
        self.template = ChatTemplate(self.tokenizer)
        self.block_size = block_size or checkpoint.props.block_size
        # one block size for decoding and for chunking a block-causal prefix
        props = dataclasses.replace(checkpoint.props, block_size=self.block_size)
        budgets = state_budgets(checkpoint_mb, prefix_cache_mb)
        self.denoiser = ModelDenoiser(checkpoint.weights, props, checkpoint.kind,
                                      turn_marks=turn_mark_ids(self.tokenizer),
                                      checkpoint_bytes=budgets["checkpoint_bytes"],
                                      prefix_cache_bytes=budgets["prefix_cache_bytes"])
        self.info = EngineInfo("embedded", str(checkpoint.path), checkpoint.context_window, self.block_size,
                               self.threshold, exact_count=True, trained_tools=checkpoint.props.trained_tools,
                               policy=policy_spec(self.policy))
        self.stop_ids = checkpoint.stop_ids
        self.reused_tokens = 0  # prompt tokens the last request found already encoded
        self.last_reuse = self.denoiser.last_reuse  # the last request's reused / encoded / source
        self.bridge: ThreadBridge[Block] = ThreadBridge("clover-decode", _decode_error)
        self.scaffold, self.draft = scaffold, draft
        self._grammars: Grammars | None = None  # built on the first request with tools
        self._no_layout = False  # the chat template writes no tool call the parser reads
        self.last_stats = HelperStats()  # the last request's scaffold and draft figures
        progress(1.0, "ready")

    # -- Engine protocol ---------------------------------------------------------------------
    def count_tokens(self, request: ChatRequest) -> int:
        return len(self.template.encode(request))

    async def stream(self, request: ChatRequest) -> AsyncGenerator[Block, None]:
        prompt = self.template.encode(request)
        opts = self._options(request, len(prompt))

        def produce(relay: Relay) -> Iterator[Block]:
            return self._blocks(prompt, opts, request, relay.forward(request.on_step), relay.cancel.is_set)

        blocks = self.bridge.stream(produce)
        try:
            async for block in blocks:
                yield block
        finally:
            await blocks.aclose()  # now, not when collected: the worker stops before its next pass

    async def aclose(self) -> None:
        await self.bridge.run(self.denoiser.reset)  # waits for a decode still winding down

    # -- internals ---------------------------------------------------------------------------
    def _options(self, request: ChatRequest, prompt_len: int) -> DecodeOptions:
        from clover_code.engine.embedded.decoding import DecodeOptions

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
                             policy=self._policy(request, threshold), temperature=request.temperature,
                             top_p=request.top_p,
                             max_tokens=max(1, min(request.max_tokens, room)), seed=request.seed)

    def _policy(self, request: ChatRequest, threshold: float) -> Policy:
        """The request's policy, else the engine's; a request's threshold is the threshold rule's knob."""
        if request.policy:
            return check_policy(request.policy, threshold)
        if request.threshold is not None and isinstance(self.policy, Threshold):
            return Threshold(threshold)
        return self.policy

    def _pending(self, prompt: list[int], session: str | None) -> torch.Tensor:
        """The prompt tokens the cached prefix lacks `[P']`; a failure forgets the cache."""
        try:
            pending = self.denoiser.reuse(prompt, session)
        except Exception:
            self.denoiser.reset()
            raise
        self.reused_tokens = len(prompt) - pending.shape[0]
        self.last_reuse = self.denoiser.last_reuse
        return pending

    def _guide(self, request: ChatRequest) -> Scaffold | None:
        """The scaffold for a request with tools (built once per checkpoint, per set of tools)."""
        if not (self.scaffold and request.tools):
            return None
        if self._grammars is None and not self._no_layout:
            from clover_code.engine.markup.call_format import probe_call_format
            from clover_code.engine.markup.vocabulary import Vocabulary

            fmt = probe_call_format(self.tokenizer)
            if fmt is None:
                log.warning("the chat template writes no tool call the parser reads: tool calls are not scaffolded")
                self._no_layout = True
            else:
                self._grammars = Grammars(fmt, Vocabulary(self.tokenizer))
        if self._grammars is None:
            return None
        grammar = self._grammars.for_tools(request.tools, required=request.tool_choice == "required")
        return Scaffold(grammar, self.denoiser.props.mask_token_id)

    def _drafter(self, request: ChatRequest, prompt: list[int]) -> CopyDrafter | None:
        return CopyDrafter(prompt, self.stop_ids) if self.draft and request.temperature <= 0 else None

    def _blocks(self, prompt: list[int], opts: DecodeOptions, request: ChatRequest,
                on_step: StepListener | None, cancelled: Callable[[], bool]) -> Iterator[Block]:
        """Decode on this (worker) thread, yielding `Block`s as they commit."""
        from clover_code.engine.embedded.decoding import decode_blocks

        start = time.perf_counter()
        pending = self._pending(prompt, request.session)
        guide, drafter = self._guide(request), self._drafter(request, prompt)
        self.last_stats = HelperStats(guide.stats if guide else None, drafter.stats if drafter else None)
        detok, stopper = Detokenizer(self.tokenizer, self.stop_ids), StopStrings(request.stop)
        results = decode_blocks(self.denoiser, pending, opts, on_step=on_step, cancelled=cancelled,
                                guide=guide, drafter=drafter)
        try:
            for result in results:
                text, hit = stopper.feed(detok.push(list(result.tokens)))
                finish = "stop" if hit else result.finish
                if finish:
                    text += "" if hit else stopper.feed(detok.flush())[0] + stopper.flush()
                yield Block(text=text, tokens=len(result.tokens), forward_passes=result.steps,
                            seconds_since_start=time.perf_counter() - start, ms=result.ms, index=result.index,
                            finish=finish, prompt_tokens=len(prompt) if finish else None,
                            prompt_reused=self.last_reuse.reused if finish else None, stop_sequence=stopper.hit)
                if finish or cancelled():
                    return
        except Exception:
            self.denoiser.reset()  # a failed forward pass may leave the cache half-written
            raise
        finally:
            results.close()
