"""The engine on a random checkpoint with Clover's real shape, bf16 on CUDA (tools/bench/bench_gpu.sh).

    python -m tools.bench.bench_gpu [--layers N] [--prefixes 1024,32768,130048] [--out FILE]
    python -m tools.bench.bench_gpu --cpu --toy        # seconds, on CPU: keeps the script from rotting

Clover-35B-A3B is a `qwen3_5_moe` hybrid: transformers' Qwen3_5MoeTextConfig defaults are its
base's published shape (hidden 2048, 40 layers, 3 Gated DeltaNet : 1 gated attention, 16/2 heads
of 256, linear heads 16 key / 32 value of 128, 256 experts, 8 routed + 1 shared of 512, vocab
248,320). The weights are random; the output head is peaked (kept to PEAK_VOCAB ids, scaled
to a logit spread of --logit-std) so that blocks resolve in several tokens per pass, as a
trained model's do. Fewer layers when the GPU has not the memory (--layers; 4 at a time keeps
the 3:1 mix). Prints one JSON object: block latency (denoise-only and fused-commit passes) at
each prefix, TPF and tokens/s (fused and unfused), prefix reuse and a rollback to a
checkpoint at the longest prefix up to 32K, checkpoint and prefix-state sizes, peak memory,
and the share of decode time spent outside forward passes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import statistics
import time
from pathlib import Path

PEAK_VOCAB = 512  # output ids the peaked head can say
TOY = dict(vocab_size=1024, hidden_size=64, num_hidden_layers=4, num_attention_heads=4, num_key_value_heads=2,
           head_dim=16, linear_key_head_dim=16, linear_value_head_dim=16, linear_num_key_heads=2,
           linear_num_value_heads=4, num_experts=8, num_experts_per_tok=2, moe_intermediate_size=32,
           shared_expert_intermediate_size=32)


class Clock:
    """Wall time that waits for the device; also sums the time spent inside forward passes."""

    def __init__(self, device: str):
        import torch

        self.sync = torch.cuda.synchronize if device.startswith("cuda") else (lambda: None)
        self.forward_s = 0.0

    def now(self) -> float:
        self.sync()
        return time.perf_counter()

    def wrap_forward(self, den) -> None:
        raw = den._forward

        def timed(*a, **kw):
            start = self.now()
            try:
                return raw(*a, **kw)
            finally:
                self.forward_s += self.now() - start
        den._forward = timed


def build_model(layers: int, toy: bool, device: str, logit_std: float):
    import torch
    from transformers import AutoModelForCausalLM, Qwen3_5MoeTextConfig

    shape = dict(TOY, num_hidden_layers=layers) if toy else dict(num_hidden_layers=layers)
    config = Qwen3_5MoeTextConfig(**shape, max_position_embeddings=131072, eos_token_id=1, pad_token_id=0)
    config.mask_token_id = config.vocab_size - 1
    dtype = torch.float32 if device == "cpu" else torch.bfloat16
    torch.manual_seed(0)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config, dtype=dtype).eval()
    peak_head(model, logit_std)
    return model


def peak_head(model, logit_std: float) -> None:
    """Keep PEAK_VOCAB output rows (silence the rest: logit 0, far below the peak) and scale
    them so their logits spread `logit_std`: confident picks, as after training."""
    import torch

    head = model.get_output_embeddings().weight  # [V, H]
    with torch.inference_mode():
        ids = torch.randint(2, PEAK_VOCAB, (1, 64), device=head.device)
        hidden = model.base_model(input_ids=ids).last_hidden_state[0]  # [64, H]
        spread = (hidden @ head[2:PEAK_VOCAB].T).float().std().item()
        head[PEAK_VOCAB:] = 0
        head[:2] = 0  # never pad or end: replies run their full length
        head[2:PEAK_VOCAB] *= logit_std / spread


def timed_median(clock: Clock, fn, runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        start = clock.now()
        fn()
        times.append(clock.now() - start)
    return statistics.median(times)


def block_latency(den, clock: Clock, prefixes: list[int], runs: int, budget_s: float) -> dict:
    import torch

    mask = torch.full((32,), den.props.mask_token_id)
    clean = torch.randint(2, PEAK_VOCAB, (32,))
    out, started = {}, time.perf_counter()
    for prefix in prefixes:
        if time.perf_counter() - started > budget_s:
            out[str(prefix)] = "skipped: time budget"
            continue
        den.reset()
        start = clock.now()
        den.commit(torch.randint(2, PEAK_VOCAB, (prefix,)))
        prefill_s = clock.now() - start
        out[str(prefix)] = {"denoise_ms": round(timed_median(clock, lambda: den.denoise(mask), runs) * 1e3, 2),
                            "fused_commit_ms": round(timed_median(clock, lambda: den.denoise(mask, clean), runs)
                                                     * 1e3, 2),
                            "prefill_tokens_per_s": round(prefix / prefill_s, 1)}
    return out


def decode_speed(model, props, clock: Clock, reply: int, fuse: bool) -> dict:
    import torch

    from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
    from clover_code.engine.embedded.denoisers import ModelDenoiser

    den = ModelDenoiser(model, props, "hybrid", fuse=fuse)
    clock.wrap_forward(den)
    prompt = torch.randint(2, PEAK_VOCAB, (1024,))
    opts = DecodeOptions(mask_id=props.mask_token_id, max_tokens=reply)
    list(decode_blocks(den, prompt[:64], DecodeOptions(mask_id=props.mask_token_id, max_tokens=32)))  # warm-up
    den.reset()
    den.commit(prompt[:-1])  # the prompt is not what this measures
    clock.forward_s = 0.0
    start = clock.now()
    blocks = list(decode_blocks(den, prompt[-1:], opts))
    wall = clock.now() - start
    tokens, passes = sum(len(b.tokens) for b in blocks), sum(b.steps for b in blocks)
    return {"tpf": round(tokens / passes, 2), "tokens_per_s": round(tokens / wall, 1), "tokens": tokens,
            "forward_passes": passes, "python_overhead_fraction": round(1 - clock.forward_s / wall, 3)}


def reuse_and_rollback(den, clock: Clock, prefix: int) -> dict:
    """A follow-up turn over `prefix` cached tokens vs the same prompt encoded cold, and an
    edit of the last message (a rollback to the checkpoint before it) vs cold."""
    import torch

    from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks

    mark = 3  # starts a message: checkpointed before
    den.turn_marks = frozenset({mark})
    history = torch.randint(4, PEAK_VOCAB, (prefix,)).tolist()
    history[prefix - 200] = mark
    opts = DecodeOptions(mask_id=den.props.mask_token_id, max_tokens=32)

    def turn(prompt: list[int]) -> float:
        start = clock.now()
        list(decode_blocks(den, den.reuse(prompt), opts))
        return clock.now() - start

    turn(history)
    follow_up = den.tokens + [mark, 7, 8, 9]
    warm = turn(follow_up)
    reused = den.last_reuse.reused
    den.reset()
    cold = turn(follow_up)
    edited = history[:prefix - 199] + [11, 12, 13]
    rollback = turn(edited)
    source, rolled = den.last_reuse.source, den.last_reuse.reused
    den.reset()
    edited_cold = turn(edited)
    return {"prefix": prefix, "follow_up_warm_s": round(warm, 3), "follow_up_cold_s": round(cold, 3),
            "prefix_reuse_speedup": round(cold / warm, 1), "reused_tokens": reused,
            "edit_rollback_s": round(rollback, 3), "edit_cold_s": round(edited_cold, 3),
            "edit_speedup": round(edited_cold / rollback, 1), "edit_source": source, "edit_reused_tokens": rolled,
            **{k: v for k, v in den.report().items() if k.startswith(("checkpoint", "prefix_bytes"))}}


def machine(device: str) -> dict:
    import torch
    import transformers

    info = {"torch": torch.__version__, "transformers": transformers.__version__, "python": platform.python_version(),
            "threads": torch.get_num_threads(), "nproc": os.cpu_count(),
            "fla_kernels": importlib.util.find_spec("fla") is not None}
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name()
        info["gpu_memory_gib"] = round(torch.cuda.get_device_properties(0).total_memory / 2**30, 1)
    return info


def auto_layers(device: str) -> int:
    """40 layers need ~70 GB of bf16 weights: fewer (4 at a time) where the GPU has less room."""
    import torch

    if device == "cpu":
        return 4
    free_gib = torch.cuda.get_device_properties(0).total_memory / 2**30 - 24  # KV at 128K, activations
    return max(4, min(40, int(free_gib / 1.75) // 4 * 4))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cpu", action="store_true", help="run on the CPU (float32)")
    p.add_argument("--toy", action="store_true", help="a toy-sized model of the same layer mix")
    p.add_argument("--layers", type=int, help="decoder layers (default: as many of 40 as fit)")
    p.add_argument("--prefixes", help="comma-separated prefix lengths (default 1024,32768,130048; toy 256,1024)")
    p.add_argument("--reply", type=int, help="tokens per timed reply (default 512; toy 96)")
    p.add_argument("--runs", type=int, default=5, help="timed runs per latency, after a warm-up")
    p.add_argument("--logit-std", type=float, default=12.0, help="spread of the peaked head's logits")
    p.add_argument("--budget-s", type=float, default=420, help="skip longer prefixes past this many seconds")
    p.add_argument("--out", help="also write the JSON here")
    a = p.parse_args()
    import torch

    from clover_code.engine.embedded.denoisers import ModelDenoiser, read_props

    device = "cpu" if a.cpu or not torch.cuda.is_available() else "cuda"
    prefixes = [int(x) for x in (a.prefixes or ("256,1024" if a.toy else "1024,32768,130048")).split(",")]
    layers = a.layers or auto_layers(device)
    started = time.perf_counter()
    model = build_model(layers, a.toy, device, a.logit_std)
    props = read_props(model.config)
    clock = Clock(device)
    den = ModelDenoiser(model, props, "hybrid")
    result = {"device": device, "model": "qwen3_5_moe random" + (" toy" if a.toy else ""), "layers": layers,
              "full_model_layers": 40, "params_m": round(sum(t.numel() for t in model.parameters()) / 1e6, 1),
              "block_latency": block_latency(den, clock, prefixes, a.runs, a.budget_s)}
    reply = a.reply or (96 if a.toy else 512)
    result["decode_fused"] = decode_speed(model, props, clock, reply, fuse=True)
    result["decode_unfused"] = decode_speed(model, props, clock, reply, fuse=False)
    result["reuse"] = reuse_and_rollback(den, clock, max([x for x in prefixes if x <= 32768] or prefixes[:1]))
    result["peak_memory_mb"] = round((torch.cuda.max_memory_allocated() if device == "cuda" else
                                      resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024) / 2**20, 1)
    result["machine"] = machine(device)
    result["wall_s"] = round(time.perf_counter() - started, 1)
    text = json.dumps(result, indent=2)
    print(text)
    if a.out:
        Path(a.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
