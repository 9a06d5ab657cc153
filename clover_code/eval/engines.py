"""`--engine [NAME=]SPEC` -> the flags of a `clover-code --task` run.

SPEC is any engine the CLI takes:
    embedded              the embedded engine's default model (CLOVER_MODEL, config, else the demo)
    embedded:DIR, DIR     the embedded engine on a checkpoint folder (--model DIR)
    URL[#MODEL]           an OpenAI-compatible server (--endpoint URL [--model MODEL])
    remote                the server CLOVER_ENDPOINT names
    scripted:FILE         replies replayed from a JSONL file, the same for every task
    scripted:DIR          DIR/<task>.jsonl per task; DIR/<task>.try2.jsonl for a second try
NAME labels the engine in the results (default: one made from the spec).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

from clover_code.jsonsafe import JSONObject

Kind = Literal["embedded", "remote", "scripted"]
LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
SPEC_HELP = ("embedded, embedded:DIR, a checkpoint DIR, http(s)://HOST/v1[#MODEL], remote, "
             "scripted:FILE or scripted:DIR")


class SpecError(ValueError):
    """An --engine or --price value that cannot work; the message says which and why."""


@dataclass(frozen=True)
class Price:
    """USD per million tokens, as providers state them."""

    input: float
    output: float

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return tokens_in / 1e6 * self.input + tokens_out / 1e6 * self.output


@dataclass(frozen=True)
class EngineSpec:
    name: str
    spec: str  # as given, for the report
    kind: Kind
    model: str | None = None  # embedded: checkpoint folder; remote: model name
    endpoint: str | None = None
    replies: Path | None = None  # scripted: a file, or a folder of per-task files
    price: Price | None = None

    @property
    def parallel(self) -> bool:
        """Whether tries may run beside others: an embedded engine has this machine to itself."""
        return self.kind != "embedded"

    def replies_for(self, task_id: str, attempt: int) -> Path:
        """The scripted replies a try replays; SpecError when the folder has none for it."""
        assert self.replies is not None
        if self.replies.is_file():
            return self.replies
        slug = task_id.replace("/", "__")
        for name in (f"{slug}.try{attempt}.jsonl", f"{slug}.jsonl"):
            if (self.replies / name).is_file():
                return self.replies / name
        raise SpecError(f"engine {self.name}: no scripted replies for task {task_id} "
                        f"({self.replies}/{slug}.jsonl)")

    def flags(self, task_id: str, attempt: int) -> list[str]:
        """The engine's flags for one try of `clover-code --task`."""
        if self.kind == "scripted":
            return ["--engine", f"scripted:{self.replies_for(task_id, attempt)}"]
        if self.kind == "embedded":
            return ["--engine", "embedded", *(["--model", self.model] if self.model else [])]
        return ["--engine", "remote", *(["--endpoint", self.endpoint] if self.endpoint else []),
                *(["--model", self.model] if self.model else [])]


def parse_engine(text: str) -> EngineSpec:
    name, spec = _split_label(text.strip())
    if not spec:
        raise SpecError(f"--engine {text!r}: no engine after the name; use one of: {SPEC_HELP}")
    kind, model, endpoint, replies = _parse_spec(spec)
    return EngineSpec(name or _default_name(kind, model, endpoint, replies), spec, kind, model, endpoint, replies)


def _split_label(text: str) -> tuple[str | None, str]:
    head, sep, rest = text.partition("=")
    if sep and LABEL.match(head) and "://" not in head:
        return head, rest.strip()
    return None, text


def _parse_spec(spec: str) -> tuple[Kind, str | None, str | None, Path | None]:
    if spec == "embedded":
        return "embedded", None, None, None
    if spec == "remote":
        return "remote", None, None, None
    kind, sep, rest = spec.partition(":")
    if kind in ("http", "https"):
        url, _, model = spec.partition("#")
        parts = urlsplit(url)
        if not parts.hostname:
            raise SpecError(f"--engine {spec!r}: not a server URL (e.g. http://gpu-box:8000/v1#MODEL)")
        return "remote", model or None, url, None
    if sep and kind == "remote":
        return _parse_spec(rest)
    if sep and kind == "embedded":
        folder = Path(rest).expanduser()
        if not (folder / "config.json").is_file():
            raise SpecError(f"--engine {spec!r}: {folder} is not a checkpoint folder (no config.json)")
        return "embedded", str(folder.resolve()), None, None
    if sep and kind == "scripted":
        path = Path(rest).expanduser()
        if not rest or not path.exists():
            raise SpecError(f"--engine {spec!r}: no such file or folder of scripted replies")
        return "scripted", None, None, path.resolve()
    folder = Path(spec).expanduser()
    if folder.is_dir() and (folder / "config.json").is_file():
        return "embedded", str(folder.resolve()), None, None
    raise SpecError(f"--engine {spec!r}: not an engine; use one of: {SPEC_HELP}")


def _default_name(kind: Kind, model: str | None, endpoint: str | None, replies: Path | None) -> str:
    if kind == "scripted" and replies is not None:
        return replies.stem if replies.is_file() else replies.name
    if kind == "embedded":
        return Path(model).name if model else "embedded"
    if model:
        return model.replace("/", "-")
    return urlsplit(endpoint).netloc if endpoint else "remote"


def parse_engines(texts: list[str], prices: list[str]) -> list[EngineSpec]:
    """Every --engine, each with its --price; names unique, every price for a known name."""
    engines = [parse_engine(t) for t in texts]
    seen: dict[str, str] = {}
    for engine in engines:
        if engine.name in seen:
            raise SpecError(f"two engines are named {engine.name!r} ({seen[engine.name]} and {engine.spec}): "
                            "label them, e.g. --engine a=SPEC --engine b=SPEC")
        seen[engine.name] = engine.spec
    by_name = {e.name: e for e in engines}
    for text in prices:
        name, price = parse_price(text)
        if name not in by_name:
            raise SpecError(f"--price {text!r}: no engine named {name!r} (engines: {', '.join(by_name)})")
        by_name[name] = _with_price(by_name[name], price)
    return [by_name[e.name] for e in engines]


def parse_price(text: str) -> tuple[str, Price]:
    """`NAME=IN,OUT`: USD per million input and output tokens."""
    name, sep, rest = text.partition("=")
    try:
        if not sep:
            raise ValueError
        tokens_in, tokens_out = (float(x) for x in rest.replace("/", ",").split(","))
        if tokens_in < 0 or tokens_out < 0:
            raise ValueError
    except ValueError:
        raise SpecError(f"--price {text!r}: write NAME=IN,OUT in USD per million input and output tokens, "
                        "e.g. --price other=0.15,0.60") from None
    return name.strip(), Price(tokens_in, tokens_out)


def _with_price(engine: EngineSpec, price: Price) -> EngineSpec:
    from dataclasses import replace

    return replace(engine, price=price)


def engine_json(engine: EngineSpec) -> dict[str, object]:
    """What run.json keeps of an engine: enough to parse it again on --resume."""
    price = [engine.price.input, engine.price.output] if engine.price else None
    return {"name": engine.name, "spec": engine.spec, "kind": engine.kind, "price": price}


def engine_from_json(data: JSONObject) -> EngineSpec:
    engine = parse_engine(f"{data['name']}={data['spec']}")
    price = data.get("price")
    return _with_price(engine, Price(*price)) if price else engine
