"""What ships and how it starts: `python -m clover_code`, the package list in pyproject,
prompts/ at the top level, and the built wheel's contents (prompts and model in, docs out)."""

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import resources
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CARD = ROOT / "clover_code" / "models" / "clover-demo" / "README.md"
# What the embedded engine needs to load the demo model, and its card.
MODEL_FILES = ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json",
               "chat_template.jinja", "README.md")


def test_python_dash_m_runs_the_cli():
    out = subprocess.run([sys.executable, "-m", "clover_code", "--help"], capture_output=True, text=True,
                         cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: clover-code")
    bad = subprocess.run([sys.executable, "-m", "clover_code", "--no-such-flag"], capture_output=True,
                         text=True, cwd=ROOT, timeout=60)
    assert bad.returncode == 2  # the CLI's usage exit passes through


def _setuptools_config() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]


def _source_packages() -> set[str]:
    """Every folder of Python code, named as it installs (prompts/ is clover_code.prompts)."""
    roots = {"clover_code": ROOT / "clover_code", "clover_code.prompts": ROOT / "prompts"}
    found = set()
    for name, top in roots.items():
        for init in top.rglob("__init__.py"):
            parts = init.parent.relative_to(top).parts
            found.add(".".join((name, *parts)))
    return found


def test_every_package_is_listed_in_pyproject():
    listed = set(_setuptools_config()["packages"])
    missing = _source_packages() - listed
    assert not missing, f"add {sorted(missing)} to [tool.setuptools] packages in pyproject.toml"


def test_prompts_live_at_the_top_level_only():
    assert _setuptools_config()["package-dir"]["clover_code.prompts"] == "prompts"
    # A leftover clover_code/prompts/ (say a __pycache__ from before the move) would be found
    # first, as an empty namespace package, and no prompt would load.
    assert not (ROOT / "clover_code" / "prompts").exists(), "one place for the prompts: prompts/; " \
        "remove clover_code/prompts/"
    loaded = resources.files("clover_code.prompts")
    assert loaded.joinpath("system.md").read_text(encoding="utf-8") == \
        (ROOT / "prompts" / "system.md").read_text(encoding="utf-8")
    assert loaded.joinpath("tools", "grep.md").is_file()


def test_model_card_is_short_and_points_to_the_history():
    card = CARD.read_text(encoding="utf-8")
    assert len(card.splitlines()) <= 150
    assert "docs/demo-model-training.md" in card
    assert (ROOT / "docs" / "demo-model-training.md").is_file()
    assert not any(p.name != "README.md" and p.suffix in (".md", ".log", ".txt")
                   for p in CARD.parent.iterdir()), "history and logs belong in docs/, not the package"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel built from a copy of the working tree (a stale build/ here cannot leak in)."""
    pytest.importorskip("pip")
    src = tmp_path_factory.mktemp("src")
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info", "build", "dist")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for name in ("clover_code", "prompts"):
        shutil.copytree(ROOT / name, src / name, ignore=skip)
    # A training log dropped beside the weights must not ship.
    (src / "clover_code" / "models" / "clover-demo" / "train.log").write_text("step 1 loss 9\n")
    out = tmp_path_factory.mktemp("wheel")
    env = {**os.environ, "PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
                    "-w", str(out), str(src)], check=True, capture_output=True, env=env, timeout=120)
    (built,) = out.glob("clover_code-*.whl")
    return built


@pytest.mark.slow
def test_wheel_ships_prompts_and_model_but_no_docs(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    prompts = {f"clover_code/prompts/{p.relative_to(ROOT / 'prompts').as_posix()}"
               for p in (ROOT / "prompts").rglob("*.md")}
    assert "clover_code/prompts/system.md" in prompts and "clover_code/prompts/tools/grep.md" in prompts
    assert prompts <= names
    assert {f"clover_code/models/clover-demo/{f}" for f in MODEL_FILES} <= names
    code = {f"clover_code/{p.relative_to(ROOT / 'clover_code').as_posix()}"
            for p in (ROOT / "clover_code").rglob("*.py") if "__pycache__" not in p.parts}
    assert code <= names, f"not in the wheel: {sorted(code - names)}"
    card = "clover_code/models/clover-demo/README.md"
    docs = {n for n in names if _is_doc_or_log(n) and n not in prompts and n != card}
    assert not docs, f"docs or logs in the wheel: {sorted(docs)}"


def _is_doc_or_log(name: str) -> bool:
    if ".dist-info/" in name:
        return False
    return name.startswith("docs/") or name.endswith((".md", ".log", ".txt"))


@pytest.mark.slow
def test_installed_wheel_loads_prompts_and_model(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    probe = ("import clover_code, clover_code.models as m\n"
             "from importlib import resources\n"
             "from clover_code.tools import tool_description\n"
             "print(clover_code.__file__)\n"
             "print(len(resources.files('clover_code.prompts').joinpath('system.md').read_text()))\n"
             "print(len(tool_description('grep')))\n"
             "print(m.demo_model())\n")
    # PYTHONPATH comes before the editable install's finder, so the wheel's files are the ones read.
    env = {**os.environ, "PYTHONPATH": str(site)}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=tmp_path,
                         env=env, timeout=60)
    assert out.returncode == 0, out.stderr
    module, system, grep, model = out.stdout.splitlines()
    assert module.startswith(str(site))
    assert int(system) > 0 and int(grep) > 0
    assert model == str(site / "clover_code" / "models" / "clover-demo")
