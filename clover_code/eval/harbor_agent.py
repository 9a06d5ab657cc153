"""A Harbor installed agent: Harbor runs clover-code on Terminal-Bench, SWE-bench, polyglot and
its other datasets, each task in its own Docker container.

    pip install harbor clover-code            # on the host: Harbor imports this module
    harbor run -d terminal-bench@2.0 \\
        --agent-import-path clover_code.eval.harbor_agent:CloverCodeAgent \\
        -m openai/MODEL --agent-kwarg endpoint=http://HOST:8000/v1 --n-concurrent 4

In each container Harbor renders install-clover-code.sh.j2 (a venv with clover-code, from
`install_spec`: a pip requirement, a wheel path or a git URL) and runs the command built by
`run_command`: `clover-code --task INSTRUCTION --output-format stream-json` in the task's
working folder, full-auto and without bubblewrap (the container is the sandbox), its events
to /logs/agent/clover-code.events.jsonl and its progress to clover-code.stderr.txt. Harbor
mounts /logs/agent at `logs_dir` on the host, where `populate_context_post_run` reads the
events: tokens in (every request's prompt, summed) and out, the cost when prices are given,
and the run's figures as metadata.

Without Harbor installed the module still imports: `run_command` and `context_values` are plain
functions (tested offline), and CloverCodeAgent exists only when Harbor does.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

from clover_code.eval.agent_run import read_events
from clover_code.jsonsafe import JSONObject

AGENT_LOGS = "/logs/agent"  # Harbor's agent log folder inside the container
EVENTS, STDERR = "clover-code.events.jsonl", "clover-code.stderr.txt"
INSTALL_TEMPLATE = Path(__file__).with_name("install-clover-code.sh.j2")
DEFAULT_INSTALL = "clover-code"


def run_command(instruction: str, *, endpoint: str | None = None, model: str | None = None,
                engine: str | None = None, max_turns: int | None = None, logs: str = AGENT_LOGS,
                executable: str = "clover-code") -> str:
    """The shell command Harbor runs in the container for one task."""
    argv = [executable, "--task", instruction, "--output-format", "stream-json", "--approval", "full-auto",
            "--no-sandbox"]
    if engine:
        argv += ["--engine", engine]
    elif endpoint:
        argv += ["--engine", "remote", "--endpoint", endpoint]
    if model:
        argv += ["--model", model]
    if max_turns:
        argv += ["--max-turns", str(max_turns)]
    folder = shlex.quote(logs)
    return (f"mkdir -p {folder} && {shlex.join(argv)} > {folder}/{EVENTS} 2> {folder}/{STDERR}")


def context_values(events: Path, price: tuple[float, float] | None = None) -> JSONObject:
    """What Harbor's AgentContext gets from a run's events file."""
    f = read_events(events)
    cost = None
    if price is not None:
        cost = (f.tokens_in or 0) / 1e6 * price[0] + f.tokens_out / 1e6 * price[1]
    metadata = {k: v for k, v in f.as_dict().items() if k not in ("tokens_in", "tokens_out")}
    return {"n_input_tokens": f.tokens_in, "n_output_tokens": f.tokens_out, "cost_usd": cost,
            "metadata": {"clover_code": metadata}}


def model_part(model_name: str | None) -> str | None:
    """Harbor's `-m provider/model` -> the model name the server knows."""
    if not model_name:
        return None
    return model_name.split("/", 1)[1] if "/" in model_name else model_name


try:  # Harbor is optional: only a machine that runs Harbor has it
    from harbor.agents.installed.base import BaseInstalledAgent, ExecInput  # untyped: pyproject's [tool.mypy]
except ImportError:
    BaseInstalledAgent = None

if BaseInstalledAgent is not None:

    class CloverCodeAgent(BaseInstalledAgent):  # type: ignore[misc]  # Harbor has no types: its base is Any
        """clover-code as a Harbor installed agent. Keyword arguments (--agent-kwarg KEY=VALUE):
        endpoint (an OpenAI-compatible server; else the embedded engine), engine (any --engine
        value, overriding endpoint), max_turns, install_spec (what pip installs), pip_args,
        price_in / price_out (USD per million tokens), api_key_env (the host variable whose
        value becomes CLOVER_API_KEY in the container)."""

        SUPPORTS_ATIF = False

        def __init__(self, *args: Any, endpoint: str | None = None, engine: str | None = None,
                     max_turns: int | str | None = None, install_spec: str = DEFAULT_INSTALL, pip_args: str = "",
                     price_in: float | str | None = None, price_out: float | str | None = None,
                     api_key_env: str = "CLOVER_API_KEY", **kwargs: Any):
            super().__init__(*args, **kwargs)
            self.endpoint, self.engine = endpoint, engine
            self.max_turns = int(max_turns) if max_turns else None
            self.install_spec, self.pip_args = install_spec, pip_args
            self.price = (float(price_in), float(price_out)) if price_in is not None and price_out is not None \
                else None
            self.api_key_env = api_key_env

        @staticmethod
        def name() -> str:
            return "clover-code"

        @property
        def _install_agent_template_path(self) -> Path:
            return INSTALL_TEMPLATE

        @property
        def _template_variables(self) -> dict[str, str]:
            variables = dict(super()._template_variables)
            variables.update(install_spec=self.install_spec, pip_args=self.pip_args)
            return variables

        def create_run_agent_commands(self, instruction: str) -> list[Any]:
            import os

            env = {"CLOVER_API_KEY": os.environ[self.api_key_env]} if os.environ.get(self.api_key_env) else {}
            command = run_command(instruction, endpoint=self.endpoint, engine=self.engine,
                                  model=model_part(getattr(self, "model_name", None)), max_turns=self.max_turns)
            return [ExecInput(command=command, env=env or None)]

        def populate_context_post_run(self, context: Any) -> None:
            values = context_values(Path(self.logs_dir) / EVENTS, self.price)
            for key in ("n_input_tokens", "n_output_tokens", "cost_usd"):
                if values[key] is not None:
                    setattr(context, key, values[key])
            if hasattr(context, "metadata"):
                context.metadata = {**(getattr(context, "metadata", None) or {}), **values["metadata"]}
