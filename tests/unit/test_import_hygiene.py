"""Heavy modules stay out of start-up paths that do not need them."""

import subprocess
import sys

import pytest


def loaded_after(statement: str) -> set[str]:
    code = f"import sys; {statement}; print(' '.join(sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(out.stdout.split())


@pytest.mark.parametrize("statement", [
    "import clover_code.cli",
    "import clover_code.engine",
    "import clover_code.agent",
    "import clover_code.agent.events",
    "import clover_code.config",
])
def test_no_torch_no_textual(statement):
    mods = loaded_after(statement)
    assert not {"torch", "transformers", "textual"} & mods


def test_help_loads_nothing_heavy():
    out = subprocess.run([sys.executable, "-X", "importtime", "-m", "clover_code.cli", "--help"],
                         capture_output=True, text=True, check=True)
    assert "usage: clover-code" in out.stdout
    heavy = ("torch", "transformers", "textual")
    assert not any(f" {m}\n" in out.stderr or out.stderr.endswith(f" {m}") for m in heavy)


def test_tools_do_not_depend_on_engine_or_ui():
    mods = loaded_after("import clover_code.tools.files, clover_code.tools.search, "
                        "clover_code.tools.shell, clover_code.tools.git, clover_code.tools.codemap.ranking")
    assert not {m for m in mods if m.startswith(("clover_code.engine", "clover_code.ui", "clover_code.agent"))}
