"""Train the demo checkpoint that ships inside the package (issue 7).

    python -m tools.training.train_demo_model data  --run RUN [--count 6000] [--heldout 150] [--workers 2]
                                                    [--slip-rate 0.3]
    python -m tools.training.train_demo_model train --run RUN [--kind attention|hybrid] [--steps N] [--minutes M]
                                                    [--device cuda --batch-tokens 65536 --workers 12]
    python -m tools.training.train_demo_model eval  --run RUN [--limit 150] [--sessions FILE] [--no-scaffold] [--draft]
                                                    [--threshold T] [--policy NAME[:KNOB]]
                                                    [--json-out FILE] [--turns-out FILE]
    python -m tools.training.train_demo_model probe --run RUN --model DIR [--limit 20] [--sessions FILE]
    python -m tools.training.train_demo_model export --run RUN [--out clover_code/models/clover-demo]

`data` writes synthetic agent sessions (tools/training/demo_model/sessions.py: the sandbox task
families run through the real tools on generated repositories) to RUN/data; the held-out
sessions use seeds the training ones never do. `train` trains a byte-level BPE on them,
then the model, checkpointing to RUN/state.pt every few minutes and resuming from it; it
is reproducible from --seed. `eval` decodes every assistant turn of the held-out sessions
with the real embedded engine at threshold 0.95 and scores the tool calls. `probe` measures
copying: how often the model writes the fresh names of renamed held-out sessions, teacher-
forced (tools/training/demo_model/copy_probe.py). `export` writes
the checkpoint in fp16 with its tokenizer and chat template.
"""

from __future__ import annotations

import argparse
import dataclasses
import glob
import gzip
import json
import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

DEFAULT_OUT = ROOT / "clover_code" / "models" / "clover-demo"


def tool_schemas(run: Path | None = None) -> list[dict]:
    """The tool schemas sessions are rendered with. A run keeps a copy (RUN/tools.json) so
    that training needs none of clover-code's own dependencies (a GPU box may lack them)."""
    saved = run / "tools.json" if run else None
    if saved and saved.exists():
        return json.loads(saved.read_text())
    from clover_code.tools import default_registry

    schemas = default_registry().schemas()
    if saved:
        saved.write_text(json.dumps(schemas))
    return schemas


def load_sessions(pattern: str) -> list[dict]:
    """Sessions from every JSON-lines file the pattern matches (gzipped ones too)."""
    sessions = []
    for path in sorted(glob.glob(pattern)):
        with (gzip.open if path.endswith(".gz") else open)(path, "rt", encoding="utf-8") as fh:
            sessions += [json.loads(line) for line in fh if line.strip()]
    return sessions


# -- data ------------------------------------------------------------------------------------

def cmd_data(args) -> int:
    data = args.run / "data"
    data.mkdir(parents=True, exist_ok=True)
    gen = [sys.executable, "-m", "tools.training.demo_model.sessions"]
    slips = ["--slip-rate", str(args.slip_rate)]
    subprocess.run([*gen, str(data / "heldout.jsonl"), "--count", str(args.heldout), "--seed", "10000000", *slips],
                   check=True, cwd=ROOT)
    subprocess.run([*gen, str(data / "train.jsonl"), "--count", str(args.count), "--seed", str(args.seed),
                    "--workers", str(args.workers), *slips], check=True, cwd=ROOT)
    return 0


# -- model -----------------------------------------------------------------------------------

def build_config(kind: str, tokenizer, size: dict):
    ids = {"mask_token_id": tokenizer.mask_token_id, "eos_token_id": tokenizer.eos_token_id,
           "pad_token_id": tokenizer.pad_token_id, "bos_token_id": None}
    common = dict(vocab_size=len(tokenizer), hidden_size=size["hidden"], num_hidden_layers=size["layers"],
                  num_attention_heads=size["heads"], num_key_value_heads=size["kv_heads"], head_dim=size["head_dim"],
                  num_experts=size["experts"], num_experts_per_tok=size["top_k"],
                  moe_intermediate_size=size["expert_ffn"], max_position_embeddings=8192,
                  tie_word_embeddings=True, **ids)
    # Block-diffusion properties the engine reads (clover_code/engine/embedded/denoisers.py).
    diffusion = dict(block_size=32, block_alignment="prompt", logits_shift=0, prefix_attention="causal")
    if kind == "attention":
        from transformers import Qwen3MoeConfig

        cfg = Qwen3MoeConfig(intermediate_size=size["expert_ffn"], decoder_sparse_step=1, norm_topk_prob=True,
                             rope_theta=10000.0, **common)
    else:
        from transformers import Qwen3_5MoeTextConfig

        cfg = Qwen3_5MoeTextConfig(
            layer_types=["linear_attention" if (i + 1) % 4 else "full_attention" for i in range(size["layers"])],
            linear_num_key_heads=size["heads"] // 2, linear_num_value_heads=size["heads"],
            linear_key_head_dim=size["head_dim"], linear_value_head_dim=size["head_dim"],
            shared_expert_intermediate_size=size["expert_ffn"], **common)
    for key, value in diffusion.items():
        setattr(cfg, key, value)
    return cfg


SIZES = {"attention": dict(hidden=256, layers=4, heads=8, kv_heads=4, head_dim=32, experts=8, top_k=2, expert_ffn=256),
         "hybrid": dict(hidden=256, layers=8, heads=8, kv_heads=4, head_dim=32, experts=8, top_k=2, expert_ffn=192),
         # more attention (6 layers, wider) for the same 30 MB: 12.0M parameters, about 1.5x the compute per token
         "attention-large": dict(hidden=320, layers=6, heads=8, kv_heads=4, head_dim=40, experts=8, top_k=2,
                                 expert_ffn=192)}


def build_model(kind: str, tokenizer, seed: int, size: str = "default"):
    import torch
    from transformers import AutoModelForCausalLM

    key = kind if size == "default" else f"{kind}-{size}"
    if key not in SIZES:
        raise SystemExit(f"no {size} size of a {kind} model")
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(build_config(kind, tokenizer, SIZES[key]))


def tokenizer_and_rows(run: Path, tools: list[dict], vocab: int, init_from: Path | None = None,
                       split: str = "words"):
    """The run's tokenizer (trained once, or the one of the checkpoint training resumes from),
    its sessions, and those as rows (cached by data size)."""
    import torch
    from transformers import AutoTokenizer

    from tools.training.demo_model.chat import check_row, render, session_row, train_tokenizer

    sessions = load_sessions(str(run / "data" / "train.jsonl*"))
    tok_dir = run / "tokenizer"
    if init_from is not None and not (tok_dir / "tokenizer.json").exists():
        AutoTokenizer.from_pretrained(init_from).save_pretrained(tok_dir)
    if not (tok_dir / "tokenizer.json").exists():
        from tokenizers import Tokenizer, models
        from transformers import PreTrainedTokenizerFast

        from tools.training.demo_model.chat import CHAT_TEMPLATE

        plain = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), chat_template=CHAT_TEMPLATE)
        texts = [render(plain, s["messages"], tools) for s in sessions]
        train_tokenizer(texts, vocab, split).save_pretrained(tok_dir)
    tokenizer = AutoTokenizer.from_pretrained(tok_dir)
    cache = run / f"rows-{len(sessions)}.pt"
    if cache.exists():
        return tokenizer, sessions, torch.load(cache, weights_only=False)
    rows = []
    for i, s in enumerate(sessions):
        row = session_row(tokenizer, s, tools)
        if i < 30:
            check_row(tokenizer, s, tools, row)
        rows.append(row)
    torch.save(rows, cache)
    return tokenizer, sessions, rows


# -- train -----------------------------------------------------------------------------------

def cmd_train(args) -> int:
    import torch

    from tools.training.demo_model.mix import Rates, RowSource
    from tools.training.demo_model.plan import Plan
    from tools.training.demo_model.rename import vocabulary_words
    from tools.training.demo_model.train import Meter, lr_at, step_loss

    torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    if args.bf16 and device.type == "cpu" and not cpu_has_bf16():
        print("warning: --bf16 on a CPU without bf16 instructions (AVX512-BF16 or AMX): autocast emulates "
              "them, about 3x slower than float32 on an AVX2 EPYC (session 16); drop --bf16",
              file=sys.stderr, flush=True)
    run = args.run
    tools = tool_schemas(run)
    tokenizer, sessions, rows = tokenizer_and_rows(run, tools, args.vocab, args.init_from, args.split)
    state_path = run / f"state-{args.kind}.pt"
    model, state = model_and_state(args, tokenizer, state_path)
    step, rng = (state["step"], state["rng"]) if state else (0, random.Random(args.seed))
    params = sum(p.numel() for p in model.parameters())
    print(f"{args.kind}: {params / 1e6:.2f}M parameters, {len(rows)} sessions, vocab {len(tokenizer)}, "
          f"on {device}", flush=True)
    if args.steps is None and state:
        raise SystemExit("--steps auto fits a fresh run to --minutes; a resumed run needs a step count")
    if args.steps is None and args.warmup < 2:
        raise SystemExit("--steps auto times the second half of the warmup: it needs --warmup 2 or more")
    rates = Rates(args.drill_rate, args.rename_rate, args.prefix_rate, args.copy_rate, args.copy_noise)
    drills = load_sessions(f"{args.drills}*") if args.drills else []  # the file, or its shards FILE.0, FILE.1
    if args.drills and not drills:
        raise SystemExit(f"--drills {args.drills}: no sessions there")
    weights = family_weights(args.family_weight, sessions)
    source = RowSource(tokenizer, tools, sessions, rows, drills, vocabulary_words(tokenizer), rates, weights)
    plan = Plan(args.steps, args.phase)

    def begin(phase):
        """The batch maker for `phase`'s rates (the flags' before any phase)."""
        if phase:
            source.rates = dataclasses.replace(rates, drill=phase.drill, rename=phase.rename)
            print(f"step {step}: drills {phase.drill:g}, renamed {phase.rename:g}", flush=True)
        return batches(args, source, rng, step, model)

    phase = plan.phase_at(step)
    next_batch = begin(phase)  # before CUDA starts: data workers fork from this process
    model.to(device)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.01)
    if state:
        opt.load_state_dict(state["opt"])  # its tensors follow the parameters' device
    stop = {"now": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(now=True))

    def save(path=state_path):
        torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step, "rng": rng,
                    "kind": args.kind, "size": args.size, "config": model.config.to_dict()}, str(path) + ".tmp")
        os.replace(str(path) + ".tmp", path)

    meter, began, last_save = Meter(), time.time(), time.time()
    deadline = began + args.minutes * 60
    model.train()
    while not stop["now"] and time.time() < deadline and (plan.steps is None or step < (args.stop_at or plan.steps)):
        if plan.steps is None and step == args.warmup // 2:
            timed_from = time.time()  # the first steps pay for start-up (CUDA, the data workers)
        if plan.steps is None and step == args.warmup:
            per_step = (time.time() - timed_from) / (step - args.warmup // 2)
            print(f"{plan.fit(step, per_step, deadline - time.time())} steps fit "
                  f"in --minutes {args.minutes:g}", flush=True)
        if plan.phase_at(step) != phase:
            if phase is not None:  # the end of a phase: keep its weights
                save(run / f"state-{args.kind}-{step}.pt")
            phase = plan.phase_at(step)
            next_batch = begin(phase)
        for group in opt.param_groups:
            group["lr"] = lr_at(step, plan.steps or args.warmup, args.lr, args.warmup)
        opt.zero_grad(set_to_none=True)
        for _ in range(args.accum):
            batch = next_batch().to(device, non_blocking=True)
            with torch.autocast(device.type, dtype=torch.bfloat16, enabled=args.bf16):
                loss, acc, _ = step_loss(model, batch, args.aux, args.ar_weight, args.ar_scope, args.certainty_weight)
            (loss / args.accum).backward()
            meter.add(loss.item(), acc, batch.tokens)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        step += 1
        if step % args.log_every == 0:
            print(f"step {step} lr {opt.param_groups[0]['lr']:.2e} {meter.line()}", flush=True)
            meter.reset()
        if time.time() - last_save > args.save_minutes * 60:
            save()
            last_save = time.time()
    save()
    print(f"stopped at step {step}", flush=True)
    return 0


def cpu_has_bf16() -> bool:
    """Whether the CPU computes bf16 natively (torch's own probes; private, hence the guard)."""
    import torch

    probes = [getattr(torch.cpu, name, None) for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported")]
    return any(probe() for probe in probes if probe is not None)


def family_weights(specs: list[str], sessions: list[dict]) -> dict[str, float]:
    """--family-weight FAMILY=W flags as {family: weight}, checked against the run's sessions."""
    known, weights = {s["family"] for s in sessions}, {}
    for spec in specs:
        family, _, weight = spec.partition("=")
        try:
            weights[family] = float(weight)
        except ValueError:
            raise SystemExit(f"--family-weight {spec}: expected FAMILY=WEIGHT, e.g. add-function=2") from None
        if family not in known:
            raise SystemExit(f"--family-weight {spec}: no {family!r} sessions here "
                             f"(families: {', '.join(sorted(known))})")
        if weights[family] < 0:
            raise SystemExit(f"--family-weight {spec}: a weight is 0 or more")
    if all(weights.get(family, 1.0) == 0 for family in known):
        raise SystemExit("--family-weight: every family weighs 0, so no session could be drawn")
    return weights


def model_and_state(args, tokenizer, state_path: Path):
    """The model on the CPU, from the run's saved state (returned too) if there is one, else
    from --init-from's weights or freshly initialised."""
    import torch

    state = torch.load(state_path, weights_only=False, map_location="cpu") if state_path.exists() else None
    # the shape a state was saved in (states before grown models had none), else --init-from's
    shape = state.get("config") if state else init_config(args.init_from)
    model = model_of_shape(shape) or build_model(args.kind, tokenizer, args.seed, args.size)
    if state:
        model.load_state_dict(state["model"])
        print(f"resumed at step {state['step']}", flush=True)
        return model, state
    if args.init_from:  # continue from a shipped checkpoint's weights
        from transformers import AutoModelForCausalLM

        model.load_state_dict(AutoModelForCausalLM.from_pretrained(args.init_from, dtype=torch.float32).state_dict())
        print(f"weights from {args.init_from}", flush=True)
    return model, None


def init_config(init_from: Path | None) -> dict | None:
    """The shape of --init-from's checkpoint, which may differ from SIZES (a grown model)."""
    if init_from is None:
        return None
    return json.loads((init_from / "config.json").read_text())


def model_of_shape(config: dict | None):
    """A fresh model of that config's shape, or None without one."""
    if config is None:
        return None
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    config = dict(config)
    shape = AutoConfig.for_model(config.pop("model_type"), **config)
    return AutoModelForCausalLM.from_config(shape, dtype=torch.float32)  # training's dtype, whatever it shipped in


def batches(args, source, rng: random.Random, step: int, model):
    """The batch maker: one row at a time from the run's generator (its state is saved
    with the run), or, with --batch-tokens, rows packed into padded batches by
    --workers processes (their generators seeded by the run's seed and this step).
    With --on-policy-rate, that share of rows trains one of its copies on the states the
    model's own decoding visits (tools/training/demo_model/on_policy.py)."""
    import torch

    from tools.training.demo_model.mix import PackedBatches
    from tools.training.demo_model.on_policy import visited_states
    from tools.training.demo_model.train import one_block, two_stream

    tokenizer = source.tokenizer
    mask_id, filler = tokenizer.mask_token_id, tokenizer.pad_token_id
    stop_ids = frozenset({tokenizer.eos_token_id, filler})  # as the engine's (<|im_end|>, <|endoftext|>)
    if not args.batch_tokens:
        def one():
            row = source.next_row(rng)
            if args.kind != "attention":
                return one_block(row, mask_id, filler, rng)
            if not args.on_policy_rate or rng.random() >= args.on_policy_rate:
                return two_stream(row, mask_id, filler, rng, args.copies)
            low, high = args.on_policy_threshold
            states = visited_states(model, row, mask_id, filler, stop_ids, rng, args.on_policy_rounds,
                                    rng.uniform(low, high))
            return two_stream(row, mask_id, filler, rng, args.copies - 1, states)
        return one
    if args.kind != "attention":
        raise SystemExit("--batch-tokens packs two-stream rows: attention models only")
    if args.on_policy_rate:
        raise SystemExit("--on-policy-rate decodes with the model being trained: one row at a time, not --batch-tokens")
    packed = PackedBatches(source, f"{args.seed}/{step}", args.batch_tokens, args.copies)
    loader = torch.utils.data.DataLoader(packed, batch_size=None, num_workers=args.workers,
                                         prefetch_factor=4 if args.workers else None)
    return iter(loader).__next__


# -- export ----------------------------------------------------------------------------------

def cmd_export(args) -> int:
    import torch
    from transformers import AutoTokenizer

    state = torch.load(args.state or args.run / f"state-{args.kind}.pt", weights_only=False, map_location="cpu")
    tokenizer = AutoTokenizer.from_pretrained(args.run / "tokenizer")
    model = model_of_shape(state.get("config")) or build_model(args.kind, tokenizer, 0, state.get("size", "default"))
    model.load_state_dict(state["model"])
    model = model.to(torch.float16)
    args.out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(args.out)
    tokenizer.save_pretrained(args.out)
    size = sum(f.stat().st_size for f in args.out.iterdir() if f.is_file())
    print(f"exported step {state['step']} to {args.out} ({size / 1e6:.1f} MB)")
    return 0


# -- eval ------------------------------------------------------------------------------------

def cmd_eval(args) -> int:
    from tools.training.demo_model.evaluate import evaluate

    sessions = load_sessions(str(args.sessions or args.run / "data" / "heldout.jsonl"))[: args.limit]
    turns: list[dict] | None = [] if args.turns_out else None
    report = evaluate(args.model, sessions, tool_schemas(), threshold=args.threshold, scaffold=args.scaffold,
                      draft=args.draft, turns_out=turns, policy=args.policy)
    print(json.dumps(report, indent=2))
    if args.json_out:
        args.json_out.write_text(json.dumps(report, indent=2))
    if args.turns_out:
        args.turns_out.write_text("".join(json.dumps(t) + "\n" for t in turns or []))
    return 0


def cmd_grow(args) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tools.training.demo_model.grow import grow

    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    try:
        grown = grow(model, args.after)
    except ValueError as error:
        raise SystemExit(f"grow: {error}") from None
    args.out.mkdir(parents=True, exist_ok=True)
    grown.to(torch.float16).save_pretrained(args.out)
    AutoTokenizer.from_pretrained(args.model).save_pretrained(args.out)
    params = sum(p.numel() for p in grown.parameters())
    print(f"{args.model}: {model.config.num_hidden_layers} layers -> {grown.config.num_hidden_layers} "
          f"({params / 1e6:.2f}M parameters) in {args.out}")
    return 0


def cmd_split_names(args) -> int:
    import shutil

    from transformers import AutoTokenizer

    from tools.training.demo_model.split_names import compound_names, split_compounds

    if not (args.model / "tokenizer.json").exists():
        raise SystemExit(f"split-names: {args.model} holds no tokenizer.json")
    if args.out.resolve() != args.model.resolve():
        shutil.copytree(args.model, args.out, dirs_exist_ok=True)
    compounds = compound_names()
    original = json.loads((args.model / "tokenizer.json").read_text(encoding="utf-8"))
    split = split_compounds(original, compounds)
    (args.out / "tokenizer.json").write_text(json.dumps(split, ensure_ascii=False), encoding="utf-8")
    tokenizer = AutoTokenizer.from_pretrained(args.out)  # as the engine will load it
    pieces = {name: tokenizer.tokenize(name) for name in compounds}
    removed = len(original["model"]["merges"]) - len(split["model"]["merges"])
    print(f"{args.out}: {removed} merges removed; of {len(compounds)} compound names, "
          f"{sum(pieces[n] == list(parts) for n, parts in compounds.items())} are word + suffix, "
          f"{sum(len(p) == 1 for p in pieces.values())} still one token")
    return 0


def threshold_range(text: str) -> tuple[float, float]:
    """`0.6:0.9` (or one value) as (low, high), each in (0, 1]."""
    low, _, high = text.partition(":")
    try:
        bounds = (float(low), float(high or low))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: LOW:HIGH thresholds, like 0.6:0.9") from None
    if not 0 < bounds[0] <= bounds[1] <= 1:
        raise argparse.ArgumentTypeError(f"{text!r}: thresholds with 0 < LOW <= HIGH <= 1")
    return bounds


def layer_list(text: str) -> list[int]:
    try:
        return [int(part) for part in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: layer indices separated by commas, like 1,3") from None


def cmd_probe(args) -> int:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from tools.training.demo_model.copy_probe import copy_probe

    torch.set_num_threads(args.threads)
    sessions = load_sessions(str(args.sessions or args.run / "data" / "heldout.jsonl"))[: args.limit]
    model = AutoModelForCausalLM.from_pretrained(args.model, dtype=torch.float32)
    print(json.dumps(copy_probe(model, AutoTokenizer.from_pretrained(args.model), sessions, tool_schemas(), args.seed)))
    return 0


def main() -> int:
    from tools.training.demo_model.chat import SPLITS
    from tools.training.demo_model.plan import Phase, parse_steps
    from tools.training.demo_model.sessions import SLIP_RATE

    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    for name in ("data", "train", "export", "eval", "probe"):
        s = sub.add_parser(name)
        s.add_argument("--run", type=Path, required=True, help="working folder for data, state and logs")
        s.add_argument("--seed", type=int, default=0)
        s.add_argument("--kind", choices=("attention", "hybrid"), default="attention")
    sub.choices["data"].add_argument("--count", type=int, default=6000)
    sub.choices["data"].add_argument("--heldout", type=int, default=150)
    sub.choices["data"].add_argument("--slip-rate", type=float, default=SLIP_RATE,
                                     help="share of sessions with one slip and its recovery "
                                          "(tools/training/demo_model/sessions.py)")
    sub.choices["data"].add_argument("--workers", type=int, default=2)
    t = sub.choices["train"]
    t.add_argument("--steps", type=parse_steps, default=4000,
                   help="length of the schedule, or auto: fitted to --minutes after the warmup (a fresh run)")
    t.add_argument("--stop-at", type=int, help="stop (and save) after this step; the schedule still spans --steps")
    t.add_argument("--init-from", type=Path, help="start from this exported checkpoint's weights, shape and tokenizer "
                   "(to continue training the shipped model in a later session)")
    t.add_argument("--minutes", type=float, default=600.0, help="stop (and save) after this long")
    t.add_argument("--lr", type=float, default=2e-3)
    t.add_argument("--warmup", type=int, default=100)
    t.add_argument("--accum", type=int, default=4, help="sessions per optimizer step")
    t.add_argument("--copies", type=int, default=2, help="noisy copies of each block per session")
    t.add_argument("--rename-rate", type=float, default=0.5,
                   help="share of sessions trained with invented names (tools/training/demo_model/rename.py)")
    t.add_argument("--prefix-rate", type=float, default=0.0,
                   help="share of sessions trained only up to a random one of their turns "
                        "(cheaper; favours early turns)")
    t.add_argument("--ar-weight", type=float, default=0.0,
                   help="weight of next-token loss over the clean prefix stream (tools/training/demo_model/train.py)")
    t.add_argument("--ar-scope", choices=("all", "turns"), default="all",
                   help="next-token targets: every token, or only the assistant turns' tokens")
    t.add_argument("--drills", type=Path, help="copy drill sessions (tools/training/demo_model/drills.py) to mix in")
    t.add_argument("--drill-rate", type=float, default=0.5, help="share of the sequences drawn from --drills")
    t.add_argument("--phase", type=Phase.parse, action="append", default=[],
                   help="FRACTION:DRILL_RATE:RENAME_RATE: from that fraction of the steps on, these rates "
                        "(repeatable; each phase's last weights are kept as RUN/state-KIND-STEP.pt)")
    t.add_argument("--family-weight", action="append", default=[], metavar="FAMILY=W",
                   help="draw that family's sessions W times as often as the others (repeatable)")
    t.add_argument("--copy-rate", type=float, default=0.0,
                   help="share of the sequences that are bare copy rows (tools/training/demo_model/copy_task.py)")
    t.add_argument("--copy-noise", type=int, default=40,
                   help="most random words either side of a copy row's span (0: the bare span)")
    t.add_argument("--on-policy-rate", type=float, default=0.0,
                   help="share of the rows whose last noisy copy is a state the model's own decoding visits, "
                        "the one before its first wrong commit if any (tools/training/demo_model/on_policy.py)")
    t.add_argument("--on-policy-rounds", type=int, default=6,
                   help="most denoising passes per row for --on-policy-rate (each a forward pass without gradients)")
    t.add_argument("--on-policy-threshold", type=threshold_range, default=(0.95, 0.95), metavar="LOW:HIGH",
                   help="the confidence threshold the on-policy decoding runs at, drawn per row from this range "
                        "(a low one visits the states a faster policy decodes through)")
    t.add_argument("--certainty-weight", type=float, default=0.0,
                   help="weight of the entropy of the masked predictions that are already right "
                        "(certainty forcing, tools/training/demo_model/train.py: more tokens per pass)")
    t.add_argument("--aux", type=float, default=0.01, help="MoE load-balancing loss weight")
    t.add_argument("--size", choices=("default", "large"), default="default",
                   help="the model's shape (SIZES; large: attention only, 6 layers, 12M parameters)")
    t.add_argument("--vocab", type=int, default=4096)
    t.add_argument("--split", choices=sorted(SPLITS), default="words",
                   help="how text is cut before BPE, for a run's new tokenizer (tools/training/demo_model/chat.py)")
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--bf16", action="store_true",
                   help="forward and backward under bfloat16 autocast (weights and optimizer stay float32); "
                        "about 20%% more tokens/s where the CPU has AMX, about 3x fewer where it has only AVX2")
    t.add_argument("--device", default="cpu", help="cpu, or cuda on a GPU box (with --batch-tokens)")
    t.add_argument("--batch-tokens", type=int, default=0,
                   help="pack rows into padded batches of about this many tokens (a GPU's way); "
                        "0: one row per forward pass")
    t.add_argument("--workers", type=int, default=0, help="processes that make the packed batches")
    t.add_argument("--log-every", type=int, default=10)
    t.add_argument("--save-minutes", type=float, default=5.0)
    sub.choices["export"].add_argument("--out", type=Path, default=DEFAULT_OUT)
    sub.choices["export"].add_argument("--state", type=Path,
                                       help="a saved state to export (default: RUN/state-KIND.pt, the latest)")
    e = sub.choices["eval"]
    e.add_argument("--model", type=Path, default=DEFAULT_OUT)
    e.add_argument("--limit", type=int, default=150)
    e.add_argument("--sessions", type=Path, help="held-out sessions to score (default: RUN/data/heldout.jsonl)")
    e.add_argument("--threshold", type=float, default=0.95)
    e.add_argument("--policy", help="decoding policy NAME[:KNOB] (clover_code/engine/policies.py; default: the "
                   "threshold rule at --threshold)")
    e.add_argument("--no-scaffold", dest="scaffold", action="store_false",
                   help="decode tool calls as plain text (the engine's default scaffolds them)")
    e.add_argument("--draft", action="store_true", help="copy drafting on (the engine's default is off)")
    e.add_argument("--json-out", type=Path)
    e.add_argument("--turns-out", type=Path,
                   help="one JSON line per decoded turn (the text written, each expected call right or not)")
    c = sub.choices["probe"]
    c.add_argument("--model", type=Path, default=DEFAULT_OUT)
    c.add_argument("--limit", type=int, default=20)
    c.add_argument("--sessions", type=Path,
                   help="held-out sessions to rename and probe (default: RUN/data/heldout.jsonl)")
    c.add_argument("--threads", type=int, default=1)
    g = sub.add_parser("grow", help="deepen an exported checkpoint (tools/training/demo_model/grow.py)")
    g.add_argument("--model", type=Path, default=DEFAULT_OUT, help="the exported checkpoint to deepen")
    g.add_argument("--out", type=Path, required=True)
    g.add_argument("--after", type=layer_list, required=True,
                   help="insert a zero-output copy after each of these layers (0-based, like 1,3)")
    n = sub.add_parser("split-names", help="spell compound package names with frequent tokens "
                       "(tools/training/demo_model/split_names.py)")
    n.add_argument("--model", type=Path, default=DEFAULT_OUT, help="the exported checkpoint whose tokenizer to change")
    n.add_argument("--out", type=Path, required=True, help="where the checkpoint goes with the changed tokenizer")
    args = p.parse_args()
    return {"data": cmd_data, "train": cmd_train, "export": cmd_export, "eval": cmd_eval,
            "probe": cmd_probe, "grow": cmd_grow,
            "split-names": cmd_split_names}[args.cmd](args)


if __name__ == "__main__":
    sys.exit(main())
