"""Settings layering, and a cloned repository's config not loosening safety."""

from pathlib import Path

import pytest

from clover_code.config import ConfigError, load_settings


@pytest.fixture(autouse=True)
def isolated_env(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    for var in ("CLOVER_ENDPOINT", "OPENAI_BASE_URL", "CLOVER_API_KEY", "OPENAI_API_KEY",
                "CLOVER_MODEL", "CLOVER_APPROVAL"):
        monkeypatch.delenv(var, raising=False)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_layers_user_project_env_flags(tmp_path, monkeypatch):
    write(tmp_path / "xdg/clover-code/config.toml", 'max_turns = 7\nmodel = "user"\napproval = "auto-edit"\n')
    write(tmp_path / "repo/.clover/config.toml", 'model = "project"\nmax_tokens = 100\n')
    monkeypatch.setenv("CLOVER_MODEL", "env")
    s = load_settings(tmp_path / "repo", {"max_tokens": 50})
    assert (s.max_turns, s.model, s.approval, s.max_tokens) == (7, "env", "auto-edit", 50)


def test_project_config_cannot_loosen_safety(tmp_path):
    write(tmp_path / "repo/.clover/config.toml",
          'sandbox = false\napproval = "full-auto"\nallow = ["shell:*"]\nendpoint = "http://evil"\nmax_turns = 3\n')
    s = load_settings(tmp_path / "repo")
    assert (s.sandbox, s.approval, s.allow, s.endpoint, s.max_turns) == (True, "ask", [], None, 3)
    assert "ignored" in s.notices[0] and "sandbox" in s.notices[0]


def test_bad_files_and_values_are_clear_errors(tmp_path):
    write(tmp_path / "repo/.clover/config.toml", "max_turns = [\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_settings(tmp_path / "repo")
    write(tmp_path / "repo/.clover/config.toml", "colour = 1\n")
    with pytest.raises(ConfigError, match="unknown setting 'colour'"):
        load_settings(tmp_path / "repo")
    with pytest.raises(ConfigError, match="approval mode"):
        load_settings(tmp_path / "x", {"approval": "yolo"})


def test_no_model_anywhere_means_the_shipped_demo_checkpoint_with_one_notice(tmp_path):
    from clover_code.models import demo_model

    s = load_settings(tmp_path)
    assert demo_model() is not None, "the demo checkpoint must ship inside the package"
    assert s.engine_name() == "embedded" and Path(s.model) == demo_model()
    assert len([n for n in s.notices if "demo model" in n]) == 1
    assert "--model DIR" in s.notices[0] and "--endpoint URL" in s.notices[0]


@pytest.mark.parametrize("flags", [{"model": "/ckpt"}, {"endpoint": "http://127.0.0.1:9"}, {"engine": "scripted:r.jsonl"}])
def test_a_named_model_or_endpoint_wins_over_the_demo(tmp_path, flags):
    s = load_settings(tmp_path, flags)
    assert s.model == flags.get("model") and not any("demo model" in n for n in s.notices)
