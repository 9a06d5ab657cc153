"""The demo model's training matches what the engine does at inference: a session's turns
tokenize as the engine tokenizes their prompts, and the two-stream objective shows each
noisy block exactly the logits the engine's denoiser computes for it."""

import dataclasses
import itertools
import os
import random
import re
import sys
from pathlib import Path

import pytest
import torch

from tools.training.demo_model.chat import CHAT_TEMPLATE, check_row, render, session_row, train_tokenizer
from tools.training.demo_model.sessions import GIT_ENV, generate
from tools.training.demo_model.train import BLOCK, forward, step_loss, two_stream

ROOT = Path(__file__).resolve().parents[2]


def small_setup(extra_text: str = "", vocab: int = 400):
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from clover_code.tools import default_registry

    os.environ.update(GIT_ENV)
    session = generate(3, "rename")
    tools = default_registry().schemas()
    plain = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(models.BPE()), chat_template=CHAT_TEMPLATE)
    tokenizer = train_tokenizer([render(plain, session["messages"], tools), extra_text], vocab)
    return session, tools, tokenizer


def test_a_generated_session_ran_the_real_tools_and_tokenizes_like_the_engine():
    session, tools, tokenizer = small_setup()
    roles = [m["role"] for m in session["messages"]]
    assert roles[:2] == ["system", "user"] and roles[-1] == "assistant" and "tool" in roles
    pytest_output = [m["content"] for m in session["messages"] if m["role"] == "tool" and "passed" in m["content"]]
    assert pytest_output and "[exit code 0]" in pytest_output[0]  # real pytest, through run_shell
    row = session_row(tokenizer, session, tools)
    check_row(tokenizer, session, tools, row)  # raises if a turn's prompt tokenizes differently
    assert len(row.turns) == roles.count("assistant")
    for _start, end in row.turns:
        assert row.ids[end - 1] == tokenizer.convert_tokens_to_ids("<|im_end|>")


def test_a_rows_prefix_is_the_row_of_the_conversation_cut_after_that_turn():
    session, tools, tokenizer = small_setup()
    row = session_row(tokenizer, session, tools)
    messages = session["messages"]
    ends = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    for k in (1, 2):
        cut = {**session, "messages": messages[: ends[k - 1] + 1]}
        want = session_row(tokenizer, cut, tools)
        got = row.prefix(k)
        assert got.turns == want.turns and len(got.turns) == k
        # the full render goes on with "\n" after <|im_end|>; the cut one ends there
        assert got.ids == want.ids[: got.turns[-1][1]] and len(want.ids) - len(got.ids) <= 1


def tiny_two_stream_setup():
    """A generated session's row, a tiny random demo-shaped model, and a two-stream batch."""
    from transformers import AutoModelForCausalLM

    from tools.training.train_demo_model import build_config

    session, tools, tokenizer = small_setup()
    row = session_row(tokenizer, session, tools)
    size = dict(hidden=64, layers=2, heads=4, kv_heads=2, head_dim=16, experts=4, top_k=2, expert_ffn=64)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(build_config("attention", tokenizer, size)).eval()
    batch = two_stream(row, tokenizer.mask_token_id, tokenizer.pad_token_id, random.Random(0), copies=1)
    return tokenizer, row, model, batch


def test_two_stream_training_sees_what_the_engine_denoiser_sees():
    from clover_code.engine.embedded.denoisers import ModelDenoiser, read_props

    tokenizer, row, model, batch = tiny_two_stream_setup()
    with torch.no_grad():
        hidden = forward(model, batch).last_hidden_state[0]
        denoiser = ModelDenoiser(model, read_props(model.config, tokenizer), "attention")
        for turn in (0, 1):  # the first block of two turns: different prefixes
            start = row.turns[turn][0]
            at = batch.noisy_from + sum(-(-(e - s) // BLOCK) for s, e in row.turns[:turn]) * BLOCK
            noisy = batch.input_ids[0, at:at + BLOCK]
            trained = model.lm_head(hidden[at:at + BLOCK])  # [32, V]
            denoiser.reset()
            denoiser.commit(torch.tensor(row.ids[:start]))
            served, _ = denoiser.denoise(noisy)  # [32, V]
            assert torch.allclose(trained, served, atol=1e-4), (trained - served).abs().max()


def test_the_next_token_term_is_plain_causal_lm_loss_over_the_clean_stream():
    import torch.nn.functional as F

    _, row, model, batch = tiny_two_stream_setup()
    with torch.no_grad():
        base, _, _ = step_loss(model, batch, 0.0)
        both, _, _ = step_loss(model, batch, 0.0, ar_weight=0.5)
        ids = torch.tensor([row.ids])
        logits = model(input_ids=ids).logits[0, :-1]  # [L-1, V]: an ordinary causal forward
        ar = F.cross_entropy(logits.float(), ids[0, 1:])
    assert torch.allclose(both - base, 0.5 * ar, atol=1e-4), (both - base, 0.5 * ar)


def test_the_turns_scope_keeps_only_assistant_tokens_as_next_token_targets():
    import torch.nn.functional as F

    _, row, model, batch = tiny_two_stream_setup()
    with torch.no_grad():
        base, _, _ = step_loss(model, batch, 0.0)
        turns, _, _ = step_loss(model, batch, 0.0, ar_weight=0.5, ar_scope="turns")
        ids = torch.tensor([row.ids])
        logits = model(input_ids=ids).logits[0]  # [L, V]
        inside = torch.tensor([t for start, end in row.turns for t in range(start, end)])
        ar = F.cross_entropy(logits[inside - 1].float(), ids[0, inside])
    assert len(inside) < len(row.ids) // 2  # the prompt and tool results are left out
    assert torch.allclose(turns - base, 0.5 * ar, atol=1e-4), (turns - base, 0.5 * ar)


def test_invented_names_replace_a_sessions_names_consistently_everywhere():
    import json
    import re

    from tools.training.demo_model.rename import renamed, session_names

    os.environ.update(GIT_ENV)
    session = generate(5, "fix-bug")
    names = session_names(session)
    package = next(iter(session["files"])).split("/")[0]
    assert package in names and not any(n.startswith("test") for n in names)
    # the bug is known by its function's name, so that stays; the fix's locals do not
    assert "median" not in names and {"ranked", "middle"} <= names
    words = ["median"] * 20 + ["budget", "lantern", "harbor", "meadow", "cobalt", "willow", "ember"]
    fresh = renamed(session, random.Random(0), words)
    text = json.dumps(fresh["messages"][1:])
    for name in names:  # none survives, even inside test names such as test_<name>_...
        assert not re.search(rf"(?<![A-Za-z0-9]){name}(?![A-Za-z0-9])", text), name
    old_words = set(re.findall(r"[A-Za-z0-9]+", json.dumps(session["messages"])))
    new_words = set(re.findall(r"[A-Za-z0-9]+", text)) - old_words
    assert new_words & set(words)  # whole vocabulary words stand in for names...
    # ...never one the session already uses: median appears exactly where it did
    assert text.count("median") == json.dumps(session["messages"][1:]).count("median")
    assert "def median" in text
    assert fresh["messages"][0] == session["messages"][0]  # the system prompt is not the task's
    for old, new in zip(session["messages"], fresh["messages"], strict=False):
        assert old["role"] == new["role"]
        for call_old, call_new in zip(old.get("tool_calls") or [], new.get("tool_calls") or [], strict=False):
            assert call_old["function"]["name"] == call_new["function"]["name"]
            new_keys = json.loads(call_new["function"]["arguments"]).keys()
            assert new_keys == json.loads(call_old["function"]["arguments"]).keys()
    new_package = fresh["messages"][1]["content"].split(" package")[0].split()[-1]
    assert new_package != package and new_package in text  # one package name, used wherever the old one was


def test_renaming_keeps_the_name_of_the_function_an_add_function_task_asks_for():
    import json

    from tools.training.demo_model.families import NEW_FUNCTIONS
    from tools.training.demo_model.rename import renamed, session_names

    os.environ.update(GIT_ENV)
    session = generate(2, "add-function")
    asked = next(f.name for f in NEW_FUNCTIONS if f"`{f.signature}`" in session["messages"][1]["content"])
    names = session_names(session)
    assert asked not in names and next(iter(session["files"])).split("/")[0] in names
    fresh = renamed(session, random.Random(0), ["lantern", "harbor", "meadow", "cobalt", "willow", "ember"])
    edit = next(json.loads(c["function"]["arguments"]) for m in fresh["messages"] for c in m.get("tool_calls") or []
                if c["function"]["name"] == "edit_file")
    assert f"def {asked}(" in edit["new_string"]  # its body still follows its own name


def test_parameters_and_locals_are_renamed_but_not_names_used_as_attributes():
    from tools.training.demo_model.rename import local_names

    code = ("def mode(values, limit: int = 3):\n    counts = Counter(values)\n"
            "    best = max(counts.values())\n    return best\n")
    assert local_names(code) == {"limit", "counts", "best"}


def test_a_copy_drill_edits_a_line_of_the_file_it_read_and_its_names_are_renamable():
    import json

    from tools.training.demo_model.rename import session_names

    os.environ.update(GIT_ENV)
    session = generate(11, "edit-line", slip_rate=0.0)
    calls = [json.loads(m["tool_calls"][0]["function"]["arguments"]) | {"tool": m["tool_calls"][0]["function"]["name"]}
             for m in session["messages"] if m.get("tool_calls")]
    results = [m["content"] for m in session["messages"] if m["role"] == "tool"]
    assert [c["tool"] for c in calls] == ["read_file", "edit_file"]
    read, edit = calls
    assert read["path"] in session["messages"][1]["content"] and edit["path"] == read["path"]
    assert results[0].count(edit["old_string"].strip()) == 1  # the line is copied from the file just read
    assert edit["new_string"] != edit["old_string"] and results[1].startswith("edited")  # the real edit applied
    # its function, parameters and locals are names the renamer replaces, so drills teach copying fresh names
    local = edit["old_string"].split("=")[0].strip()
    assert local in session_names(session)


def test_a_bare_copy_row_targets_exactly_the_span_its_prompt_holds_between_backticks():
    from tools.training.demo_model.copy_task import copy_row
    from tools.training.demo_model.rename import vocabulary_words

    _, _, tokenizer = small_setup()
    words = vocabulary_words(tokenizer)
    rng = random.Random(5)
    for _ in range(20):
        row = copy_row(tokenizer, rng, words)
        (start, end), = row.turns
        prompt, turn = tokenizer.decode(row.ids[:start]), tokenizer.decode(row.ids[start:end])
        assert turn.endswith("<|im_end|>") and end == len(row.ids)
        span = turn.removesuffix("<|im_end|>")
        assert f"`{span}`" in prompt and prompt.endswith("<|im_start|>assistant\n")
        # every target token can only be copied: none of it is markup the model could recall
        assert span and "`" not in span
    batch = two_stream(row, tokenizer.mask_token_id, tokenizer.pad_token_id, rng, 2)
    assert batch.targets.numel() > 0 and batch.noisy_from == len(row.ids)
    bare = copy_row(tokenizer, rng, words, noise=0)  # no words around the span
    (start, _), = bare.turns
    span = tokenizer.decode(bare.ids[start:]).removesuffix("<|im_end|>")
    assert tokenizer.decode(bare.ids[:start]) == f"<|im_start|>user\n`{span}`<|im_end|>\n<|im_start|>assistant\n"


def test_fix_bug_finds_the_file_through_grep_so_every_name_is_copied_from_the_step_before():
    import json

    os.environ.update(GIT_ENV)
    session = generate(7, "fix-bug")
    messages = session["messages"]
    calls = [(i, c["function"]["name"], json.loads(c["function"]["arguments"]))
             for i, m in enumerate(messages) for c in m.get("tool_calls") or []]
    names = [name for _, name, _ in calls]
    assert names == ["run_shell", "grep", "read_file", "edit_file", "run_shell", "git_commit"]
    (at_grep, _, grep), (at_read, _, read) = calls[1], calls[2]
    function = grep["pattern"].removeprefix("def ")
    assert f"test_{function}" in messages[at_grep - 1]["content"]  # the failing test's name, just before
    assert messages[at_read - 1]["content"].strip() == read["path"]  # grep's one match, just before
    assert read["path"] in session["files"] and f"def {function}(" in session["files"][read["path"]]


def test_fix_bug_test_suites_vary_their_layout_and_the_first_failure_still_names_the_buggy_function(tmp_path):
    import subprocess

    from tools.training.demo_model.families import fix_bug

    layouts = set()
    for seed in range(40):
        task = fix_bug(random.Random(seed))
        suite = next(text for path, text in task.files.items() if path.startswith("tests/"))
        names, blocks = re.findall(r"^def (test_\w+)\(", suite, re.M), suite.split("\n\n\n")
        layouts |= {"empty" for block in blocks if "pytest.raises(ValueError)" in block}
        layouts |= {"merged" for block in blocks if block.count("assert ") == 2}
        layouts |= {"reversed" for a, b in itertools.pairwise(names) if (a, b) in
                    {("test_median_odd", "test_median_even"), ("test_clamp_low", "test_clamp_high")}}
        if seed < 6:  # the suite runs as written: only the buggy function's tests fail
            repo = tmp_path / str(seed)
            for path, text in task.files.items():
                (repo / path).parent.mkdir(parents=True, exist_ok=True)
                (repo / path).write_text(text)
            run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"], cwd=repo,
                                 capture_output=True, text=True)
            failed = re.findall(r"FAILED \S+::(test_\w+)", run.stdout)
            bug = task.steps[1]([])[0].arguments["pattern"].removeprefix("def ")
            assert failed and all(name.startswith(f"test_{bug}") for name in failed), run.stdout
    assert layouts == {"empty", "merged", "reversed"}


def test_a_slip_is_a_real_tool_error_then_the_right_step_and_never_a_training_target():
    from tools.training.demo_model.chat import is_target

    os.environ.update(GIT_ENV)
    session = next(s for seed in range(8) if (s := generate(seed, "fix-bug", slip_rate=1.0)) is not None
                   and any(m.get("slip") for m in s["messages"]))
    messages = session["messages"]
    at = next(i for i, m in enumerate(messages) if m.get("slip"))
    slip, error, retry = messages[at], messages[at + 1], messages[at + 2]
    assert error["role"] == "tool" and "not found" in error["content"]  # what the real tool said
    assert retry["role"] == "assistant" and not retry.get("slip")
    assert retry["tool_calls"][0]["function"]["name"] == slip["tool_calls"][0]["function"]["name"]
    assert retry["tool_calls"][0]["function"]["arguments"] != slip["tool_calls"][0]["function"]["arguments"]
    _, tools, tokenizer = small_setup()
    row = session_row(tokenizer, session, tools)
    check_row(tokenizer, session, tools, row)
    assert len(row.turns) == sum(1 for m in messages if is_target(m)) == sum(
        1 for m in messages if m["role"] == "assistant") - 1
    slip_text = slip["tool_calls"][0]["function"]["arguments"]
    assert not any(slip_text in tokenizer.decode(row.ids[s:e]) for s, e in row.turns)


def test_the_evaluator_scores_target_turns_and_reports_recovery_after_a_slip():
    from clover_code.models import demo_model
    from clover_code.tools import default_registry
    from tools.training.demo_model.chat import is_target
    from tools.training.demo_model.evaluate import evaluate

    os.environ.update(GIT_ENV)
    session = next(s for seed in range(8) if (s := generate(seed, "fix-bug", slip_rate=1.0)) is not None
                   and any(m.get("slip") for m in s["messages"]))
    turns: list[dict] = []
    report = evaluate(demo_model(), [session], default_registry().schemas(), max_tokens=256, turns_out=turns)
    targets = [m for m in session["messages"] if is_target(m)]
    assert [t["turn"] for t in turns] == list(range(1, len(targets) + 1))  # one record per decoded turn
    assert sum(map(sum, (t["right"] for t in turns))) == round(report["exact_call_rate"] * report["calls_expected"])
    assert sum(t["passes"] for t in turns) == report["forward_passes"] and turns[0]["session"] == session["seed"]
    assert report["turns"] == report["families"]["fix-bug"]["turns"] == len(targets)
    assert report["calls_expected"] == sum(len(m.get("tool_calls") or []) for m in targets)
    assert report["after_slip"]["turns"] == 1 and report["forward_passes"] > 0
    assert report["tokens"] > report["forward_passes"]  # the trained checkpoint decodes in parallel
    tallies = [tuple(map(int, t.split("/"))) for t in report["exact_by_call"].values()]
    assert sum(n for _, n in tallies) == report["calls_expected"]
    assert sum(right for right, _ in tallies) == round(report["exact_call_rate"] * report["calls_expected"])
    assert "fix-bug 1.1 run_shell" in report["exact_by_call"]  # the first call of the first turn


def test_the_evaluator_offers_a_checkpoint_the_tools_it_was_trained_with_as_the_agent_does():
    from clover_code.tools import default_registry
    from clover_code.wiring.assemble import trained_only
    from tools.training.demo_model.evaluate import offered_tools

    registry = default_registry()
    schemas = registry.schemas()
    trained = ("read_file", "grep", "git_commit")
    assert [t["function"]["name"] for t in offered_tools(schemas, trained)] == ["read_file", "grep", "git_commit"]
    assert offered_tools(schemas, trained) == trained_only(registry, trained).schemas()
    assert offered_tools(schemas, None) == schemas  # Clover names none: every tool


def test_the_copy_probe_scores_exactly_the_tokens_of_the_fresh_names_in_the_turns():
    from tools.training.demo_model.chat import session_row
    from tools.training.demo_model.copy_probe import name_blocks, words_of
    from tools.training.demo_model.rename import renamed, vocabulary_words

    fresh_words = "lantern harbor meadow cobalt willow ember quartz saddle"
    session, tools, tokenizer = small_setup(f"{fresh_words} " * 20, vocab=600)
    assert set(fresh_words.split()) <= set(vocabulary_words(tokenizer))
    fresh = renamed(session, random.Random(1), fresh_words.split())
    new = (words_of(fresh) - words_of(session)) & set(fresh_words.split())  # the one-token fresh names
    assert new
    row = session_row(tokenizer, fresh, tools)
    found = [tokenizer.decode([block[j]]) for _, block, names in name_blocks(tokenizer, row, new) for j in names]
    turns_text = "".join(tokenizer.decode(row.ids[s:e]) for s, e in row.turns)
    want = sum(len(re.findall(rf"(?<![A-Za-z]){w}(?![A-Za-z])", turns_text)) for w in new)
    assert found and set(found) <= new and len(found) == want
    assert not list(name_blocks(tokenizer, session_row(tokenizer, session, tools), new))


def test_renaming_depends_only_on_the_seed_not_on_the_interpreters_hash_seed(tmp_path):
    import json
    import subprocess

    os.environ.update(GIT_ENV)
    (tmp_path / "session.json").write_text(json.dumps(generate(5, "fix-bug")))
    # `python -c` in the repository root imports from there (its sys.path starts with the cwd).
    code = ("import json, random; from tools.training.demo_model.rename import renamed;"
            f"s = json.load(open({str(tmp_path / 'session.json')!r}));"
            "print(json.dumps(renamed(s, random.Random(0), ['lantern', 'harbor', 'meadow'])))")
    runs = {subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(h)}).stdout for h in (1, 2, 3)}
    assert len(runs) == 1


def test_packed_rows_compute_exactly_what_each_row_computes_alone():
    from tools.training.demo_model.train import pack

    tokenizer, row, model, _ = tiny_two_stream_setup()
    rng, pad = random.Random(1), tokenizer.pad_token_id
    parts = [two_stream(r, tokenizer.mask_token_id, pad, rng, 2) for r in (row.prefix(1), row, row.prefix(2))]
    packed = pack(parts, pad)
    assert packed.input_ids.shape[0] == 3 and packed.tokens == sum(p.tokens for p in parts)
    assert torch.equal(packed.targets, torch.cat([p.targets for p in parts]))
    with torch.no_grad():
        every = forward(model, packed).last_hidden_state.flatten(0, 1)  # [3 * T, H]
        alone = [forward(model, p).last_hidden_state.flatten(0, 1) for p in parts]
        for field, back in (("rows", 0), ("clean", 1), ("answers", 1)):  # noisy targets, both next-token scopes
            got = model.lm_head(every[getattr(packed, field) - back])
            want = torch.cat([model.lm_head(h[getattr(p, field) - back]) for h, p in zip(alone, parts, strict=False)])
            assert torch.allclose(got, want, atol=1e-4), (field, (got - want).abs().max())
        assert torch.equal(packed.input_ids.flatten()[packed.clean],
                           torch.cat([p.input_ids.flatten()[p.clean] for p in parts]))
        loss, _, count = step_loss(model, packed, 0.0, ar_weight=0.5)
    assert count == packed.targets.numel() and torch.isfinite(loss)


def test_rows_are_grouped_by_size_within_the_token_budget():
    from tools.training.demo_model.mix import group_by_size, padded_size

    tokenizer, row, _, _ = tiny_two_stream_setup()
    rng = random.Random(2)
    parts = [two_stream(row.prefix(rng.randint(1, len(row.turns))), tokenizer.mask_token_id,
                        tokenizer.pad_token_id, rng, 1) for _ in range(24)]
    budget = 3 * max(padded_size([p]) for p in parts)
    groups = group_by_size(parts, budget)
    assert sorted(id(p) for g in groups for p in g) == sorted(id(p) for p in parts)
    assert all(len(g) * padded_size(g) <= budget for g in groups)
    assert len(groups) < len(parts)  # rows do share batches


def test_a_family_weight_draws_that_familys_sessions_that_many_times_as_often():
    from tools.training.demo_model.mix import Rates, RowSource

    sessions = [{"family": f} for f in ("fix-bug", "add-function", "rename") * 4]
    uniform = RowSource(None, [], sessions, [], [], [], Rates())
    rng, same = random.Random(5), random.Random(5)
    assert [uniform.session_index(rng) for _ in range(50)] == [same.randrange(len(sessions)) for _ in range(50)]
    weighted = RowSource(None, [], sessions, [], [], [], Rates(), {"add-function": 3.0, "rename": 0.0})
    rng = random.Random(6)
    drawn = [sessions[weighted.session_index(rng)]["family"] for _ in range(4000)]
    assert drawn.count("rename") == 0
    assert 2.6 < drawn.count("add-function") / drawn.count("fix-bug") < 3.4
    from tools.training.train_demo_model import family_weights

    assert family_weights(["add-function=2.5"], sessions) == {"add-function": 2.5}
    for bad, says in (("add-fn=2", "no 'add-fn' sessions"), ("rename", "expected FAMILY=WEIGHT")):
        with pytest.raises(SystemExit, match=says):
            family_weights([bad], sessions)
    with pytest.raises(SystemExit, match="every family weighs 0"):
        family_weights(["add-function=0", "fix-bug=0", "rename=0"], sessions)


def test_a_plan_fits_its_length_to_the_time_left_and_starts_phases_at_fractions_of_it():
    import argparse

    import pytest

    from tools.training.demo_model.plan import Phase, Plan, parse_steps

    plan = Plan(parse_steps("auto"), [Phase.parse("0.8:0.3:0.5"), Phase.parse("0:0.3:0.5"), Phase.parse("0.5:0.9:0.7")])
    assert plan.phase_at(0) == Phase(0.0, 0.3, 0.5) and plan.phase_at(10_000) == Phase(0.0, 0.3, 0.5)  # length unknown
    assert plan.fit(100, seconds_per_step=0.05, seconds_left=500.0) == 100 + 9600
    assert plan.phase_at(4849) == Phase(0.0, 0.3, 0.5)
    assert plan.phase_at(4850) == Phase(0.5, 0.9, 0.7) and plan.phase_at(7759) == Phase(0.5, 0.9, 0.7)
    assert plan.phase_at(7760) == Phase(0.8, 0.3, 0.5)
    assert Plan(1000, [Phase.parse("0.5:1:1")]).phase_at(499) is None
    for bad in ("0.5:0.9", "half:0.9:0.7", "0.5:1.5:0.7"):
        with pytest.raises(argparse.ArgumentTypeError):
            Phase.parse(bad)
    with pytest.raises(argparse.ArgumentTypeError):
        parse_steps("many")


def test_the_large_shape_still_ships_within_30_mb_in_fp16():
    from transformers import AutoTokenizer

    from tools.training.train_demo_model import DEFAULT_OUT, build_model

    tokenizer = AutoTokenizer.from_pretrained(DEFAULT_OUT)
    default = sum(p.numel() for p in build_model("attention", tokenizer, 0).parameters())
    large = sum(p.numel() for p in build_model("attention", tokenizer, 0, "large").parameters())
    tokenizer_bytes = sum(f.stat().st_size for f in DEFAULT_OUT.glob("tokenizer*"))
    assert large > 1.4 * default and 2 * large + tokenizer_bytes < 30e6, (default, large)


def test_a_grown_model_computes_what_the_original_did_and_its_new_layers_can_learn():
    from transformers import AutoModelForCausalLM, Qwen3MoeConfig

    from tools.training.demo_model.grow import grow, layer_plan

    torch.manual_seed(0)
    config = Qwen3MoeConfig(vocab_size=97, hidden_size=32, num_hidden_layers=3, num_attention_heads=4,
                            num_key_value_heads=2, head_dim=8, num_experts=4, num_experts_per_tok=2,
                            moe_intermediate_size=16, intermediate_size=16, tie_word_embeddings=True)
    model = AutoModelForCausalLM.from_config(config).eval()
    ids = torch.randint(0, 97, (2, 11))
    grown = grow(model, [0, 2]).eval()
    assert grown.config.num_hidden_layers == 5 and model.config.num_hidden_layers == 3
    with torch.no_grad():
        assert torch.equal(grown(ids).logits, model(ids).logits)
    # the inserted layers (1 and 4) copy their originals' inputs but start writing nothing
    new = grown.model.layers[1]
    assert torch.equal(new.self_attn.q_proj.weight, model.model.layers[0].self_attn.q_proj.weight)
    assert not new.self_attn.o_proj.weight.any() and not new.mlp.experts.down_proj.any()
    grown.train()
    grown(ids, labels=ids).loss.backward()
    assert new.self_attn.o_proj.weight.grad.abs().sum() > 0  # so training moves them off zero
    assert layer_plan(3, [2, 2]) == [(0, False), (1, False), (2, False), (2, True), (2, True)]
    with pytest.raises(ValueError, match="no layer 3"):
        layer_plan(3, [3])


def test_splitting_compound_names_spells_them_with_their_words_and_keeps_other_tokens():
    import json

    from tokenizers import Tokenizer

    from tools.training.demo_model.split_names import compound_names, split_compounds

    compounds = compound_names(("path", "calc"), ("kit", "ops", ""))
    assert compounds == {"pathkit": ("path", "kit"), "pathops": ("path", "ops"),
                         "calckit": ("calc", "kit"), "calcops": ("calc", "ops")}
    # `cops` is frequent enough to be merged before `calc` is, so it would cross calc|ops
    corpus = " ".join(["pathops calcops pathkit calckit"] * 40 + ["cops"] * 120 + ["path calc kit ops"] * 20
                      + ["read the file and run the tests"] * 20)
    before = Tokenizer.from_str(train_tokenizer([corpus], 320).backend_tokenizer.to_str())
    assert all(len(before.encode(name).tokens) == 1 for name in compounds)
    after = Tokenizer.from_str(json.dumps(split_compounds(json.loads(before.to_str()), compounds)))
    for name, (word, suffix) in compounds.items():
        assert after.encode(name).tokens == [word, suffix]
    for word in ("path", "calc", "kit", "ops"):
        assert after.encode(word).tokens == [word]
    plain = "read the file and run the tests"
    assert after.encode(plain).ids == before.encode(plain).ids
    assert after.decode(after.encode(corpus).ids) == corpus


def test_an_on_policy_block_is_the_engines_own_state_before_its_first_wrong_commit():
    """The first block of a turn is given the tokens the engine's decoding writes there,
    except the one it commits at its third step: the block must train on the engine's
    state before that step (what it had committed in steps one and two, the rest masked)."""
    from clover_code.engine.embedded.decoding import DecodeOptions, decode_blocks
    from clover_code.engine.embedded.denoisers import ModelDenoiser, read_props
    from tools.training.demo_model.on_policy import visited_states

    tokenizer, row, model, _ = tiny_two_stream_setup()
    mask = tokenizer.mask_token_id
    start, _ = next((s, e) for s, e in row.turns if e - s >= BLOCK)
    denoiser = ModelDenoiser(model, read_props(model.config, tokenizer), "attention")
    denoiser.commit(torch.tensor(row.ids[:start]))
    steps = []
    written = next(decode_blocks(denoiser, None, DecodeOptions(mask_id=mask, max_tokens=BLOCK),
                                 on_step=steps.append)).tokens
    assert len(steps) >= 3
    ids = list(row.ids)
    ids[start:start + BLOCK] = written
    wrong = steps[2].newly[0]
    ids[start + wrong] = next(t for t in range(len(tokenizer)) if t not in (written[wrong], mask))
    row = dataclasses.replace(row, ids=ids)

    states = visited_states(model, row, mask, tokenizer.pad_token_id, frozenset(), random.Random(0), rounds=40)
    state = next(noisy for s, _, noisy in states if s == start)
    before = {i for step in steps[:2] for i in step.newly}
    assert state == [ids[start + i] if i in before else mask for i in range(BLOCK)]


def test_on_policy_states_keep_their_true_tokens_and_train_only_the_masked_positions():
    from tools.training.demo_model.on_policy import visited_states

    tokenizer, row, model, _ = tiny_two_stream_setup()
    mask, filler = tokenizer.mask_token_id, tokenizer.pad_token_id
    states = visited_states(model, row, mask, filler, frozenset(), random.Random(1), rounds=3)
    batch = two_stream(row, mask, filler, random.Random(1), 0, states)
    assert [s for s, _, _ in states] == [s for s, e in row.turns for s in range(s, e, BLOCK)]
    for _start, block, noisy in states:
        assert all(t in (mask, b) for t, b in zip(noisy, block, strict=False))
    hidden = [(k, j) for k, (_, _, noisy) in enumerate(states) for j in range(BLOCK) if noisy[j] == mask]
    assert batch.rows.tolist() == [batch.noisy_from + k * BLOCK + j for k, j in hidden]
    assert batch.targets.tolist() == [states[k][1][j] for k, j in hidden]


def test_certainty_forcing_sharpens_only_the_picks_that_are_already_right():
    from tools.training.demo_model.train import certainty_loss

    logits = torch.tensor([[2.0, 1.0, 0.0],  # right, unsure
                           [0.0, 3.0, 0.0],  # wrong: the target is 0
                           [0.0, 0.0, 9.0]], requires_grad=True)  # right, sure
    targets = torch.tensor([0, 0, 2])
    loss = certainty_loss(logits, targets)
    p = logits.detach()[[0, 2]].softmax(-1)
    assert torch.allclose(loss, -(p * p.log()).sum(-1).mean())
    loss.backward()
    assert logits.grad[1].abs().sum() == 0  # a wrong pick is left to the cross-entropy
    assert logits.grad[0, 0] < 0  # descending raises the right pick's logit
    assert certainty_loss(logits[1:2], targets[1:2]) == 0


def test_the_certainty_weight_adds_the_term_to_the_diffusion_loss():
    from tools.training.demo_model.train import certainty_loss

    _, _, model, batch = tiny_two_stream_setup()
    with torch.no_grad():
        base, _, _ = step_loss(model, batch, 0.0)
        forced, _, _ = step_loss(model, batch, 0.0, certainty_weight=2.0)
        hidden = forward(model, batch).last_hidden_state.flatten(0, 1)
        term = certainty_loss(model.lm_head(hidden[batch.rows]).float(), batch.targets)
    assert torch.allclose(forced - base, 2.0 * term, atol=1e-5)


def test_the_on_policy_threshold_is_a_range_of_thresholds():
    import argparse

    from tools.training.train_demo_model import threshold_range

    assert threshold_range("0.6:0.9") == (0.6, 0.9)
    assert threshold_range("0.8") == (0.8, 0.8)
    for bad in ("0.9:0.6", "0:0.5", "high", "0.5:1.5"):
        with pytest.raises(argparse.ArgumentTypeError):
            threshold_range(bad)
