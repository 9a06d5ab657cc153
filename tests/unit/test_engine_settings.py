"""The embedded engine's memory budgets as user-config keys: checked, passed to the engine,
and never taken from a repository's config."""

from pathlib import Path

import pytest

from clover_code.config import ConfigError, load_settings
from clover_code.wiring.assemble import build_engine


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for var in ("CLOVER_ENDPOINT", "OPENAI_BASE_URL", "CLOVER_MODEL"):
        monkeypatch.delenv(var, raising=False)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_memory_budgets_from_the_user_config_reach_the_engine(tmp_path, tiny_hybrid_ckpt):
    write(tmp_path / "xdg/clover-code/config.toml", "checkpoint_mb = 0\nprefix-cache-mb = 1.5\n")
    settings = load_settings(tmp_path, {"model": str(tiny_hybrid_ckpt)})
    assert (settings.checkpoint_mb, settings.prefix_cache_mb) == (0, 1.5)
    engine = build_engine(settings)
    assert engine.denoiser.state.checkpoints.budget == 0
    assert engine.denoiser.pool.budget == int(1.5 * 2**20)


def test_a_repository_cannot_set_them(tmp_path):
    write(tmp_path / "repo/.clover/config.toml", "checkpoint_mb = 99999\nprefix_cache_mb = 99999\n")
    settings = load_settings(tmp_path / "repo")
    assert (settings.checkpoint_mb, settings.prefix_cache_mb) == (None, None)
    assert any("checkpoint_mb" in n and "prefix_cache_mb" in n for n in settings.notices)


@pytest.mark.parametrize("line", ["checkpoint_mb = -1", 'prefix_cache_mb = "lots"', "checkpoint_mb = true"])
def test_bad_values_are_clear_errors(tmp_path, line):
    write(tmp_path / "xdg/clover-code/config.toml", line + "\n")
    with pytest.raises(ConfigError, match="a number of megabytes, 0 or more"):
        load_settings(tmp_path)


def test_scaffold_is_on_unless_the_flag_or_the_config_says_no(tmp_path, tiny_attention_ckpt):
    from clover_code.cli import main_parser, serve_parser
    from clover_code.wiring.flags import settings_for

    model = ["--model", str(tiny_attention_ckpt), "--cwd", str(tmp_path)]
    _, on = settings_for("headless", main_parser().parse_args(["--task", "x", *model]))
    _, off = settings_for("headless", main_parser().parse_args(["--task", "x", "--no-scaffold", *model]))
    assert (on.scaffold, off.scaffold, on.copy_drafting) == (True, False, False)
    assert build_engine(off).scaffold is False and build_engine(on).scaffold is True
    write(tmp_path / "xdg/clover-code/config.toml", "scaffold = false\ncopy_drafting = true\n")
    _, from_file = settings_for("headless", main_parser().parse_args(["--task", "x", *model]))
    assert (from_file.scaffold, from_file.copy_drafting) == (False, True)
    assert serve_parser().parse_args(["--no-scaffold"]).scaffold is False
    assert serve_parser().parse_args([]).scaffold is None


def test_serve_reads_the_user_config_as_every_mode_does(tmp_path, tiny_hybrid_ckpt, monkeypatch):
    import uvicorn

    from clover_code.cli import serve_parser
    from clover_code.wiring.serve import run_serve

    write(tmp_path / "xdg/clover-code/config.toml",
          f'model = "{tiny_hybrid_ckpt}"\ncheckpoint_mb = 0\nprefix_cache_mb = 2\nscaffold = false\n'
          'endpoint = "http://elsewhere.invalid/v1"\n')  # the TUI's remote engine; serve still runs embedded
    served = []
    monkeypatch.setattr(uvicorn.Server, "run", lambda server, **kw: served.append(server.config))
    monkeypatch.chdir(tmp_path)
    flags = ["--threshold", "0.9", "--max-connections", "7", "--header-timeout", "2.5", "--body-timeout", "9"]
    assert run_serve(serve_parser().parse_args(flags)) == 0
    engine = served[0].app.state.server.engine
    assert engine.denoiser.state.checkpoints.budget == 0 and engine.denoiser.pool.budget == 2 * 2**20
    assert (engine.scaffold, engine.threshold) == (False, 0.9)
    limits = served[0].limits  # the connection guard's, as the flags say
    assert (limits.max_connections, limits.header_timeout, served[0].backlog) == (7, 2.5, 7)
    assert served[0].app.state.server.body_timeout == 9


def test_serve_refuses_bad_flags_and_no_model_with_one_line(tmp_path, monkeypatch, capsys):
    from clover_code.cli import serve_parser
    from clover_code.wiring.serve import run_serve

    monkeypatch.chdir(tmp_path)
    assert run_serve(serve_parser().parse_args(["--threshold", "2", "--model", "x"])) == 2
    assert run_serve(serve_parser().parse_args([])) == 2  # never the toy demo model by default
    err = capsys.readouterr().err
    assert "--threshold 2" in err and "--model DIR" in err and "Traceback" not in err
