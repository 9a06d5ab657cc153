"""The README against the code, both ways (the Harlequin habit): every command-line flag,
environment variable and exit code the README names exists in the code, and every one the code
defines is named in the README. Flags come from the real argparse parsers, environment variables
from config.ENV_VARS, exit codes from ui/exit_codes.py. Beside them: every path the docs name in
backticks exists, every relative link lands, and the README stays a product page (no commit ids,
its two fresh-machine commands are the Makefile's).

Other branches add flags and rename files while the docs are written: each failure names the
missing thing, where it was found and the side it is missing from.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from clover_code.config import ENV_VARS
from clover_code.ui import exit_codes

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "clover_code"
README = ROOT / "README.md"
DOCS = (README, *sorted((ROOT / "docs").glob("*.md")), PACKAGE / "models" / "clover-demo" / "README.md")
# The pages that describe the house as built: a bare `module.py` they name is a file of ours.
MAP_DOCS = (README, ROOT / "docs" / "architecture.md", ROOT / "docs" / "security.md")
# Where a parser factory (a `*_parser()` function) may live; each parser is known by its prog.
PARSER_HOMES = ("clover_code.cli", "clover_code.wiring.flags", "clover_code.wiring.serve", "clover_code.eval.main")
MAIN = "clover-code"
FOREIGN = "another program"  # the owner of a command clover-code does not run (pip, llama-server)
OWN_ENV_PREFIX = "CLOVER_"

HEADING = re.compile(r"^(#{1,6})\s+(.*)")
SPAN = re.compile(r"`([^`]+)`")
FLAG = re.compile(r"(?<![\w-])--[A-Za-z][\w-]*")
COMMAND_SEPARATOR = re.compile(r"\|\||&&|[|;]|\$\(")
ASSIGNMENTS = re.compile(r"^(?:[A-Za-z_]\w*=(?:\"[^\"]*\"|'[^']*'|\S*)\s+)+")
PATH = re.compile(r"(?<![\w./~$:@<-])[\w.-]+/(?:[\w.*-]+/?)*")
BARE_FILE = re.compile(r"[\w-]+\.py")
LINK = re.compile(r"\]\(([^)\s]+)\)")
COMMIT_ID = re.compile(r"\b(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}\b")


# -- the code's side -------------------------------------------------------------------------


@functools.cache
def parsers() -> dict[str, argparse.ArgumentParser]:
    """Every parser of the `clover-code` command, by prog ("clover-code", "clover-code serve")."""
    found: dict[str, argparse.ArgumentParser] = {}
    for home in PARSER_HOMES:
        module = importlib.import_module(home)
        for name, factory in vars(module).items():
            if name.endswith("_parser") and inspect.isfunction(factory) and factory.__module__ == home \
                    and all(p.default is not p.empty for p in inspect.signature(factory).parameters.values()):
                _add_parser(factory(), found)
    assert MAIN in found, f"no parser with prog {MAIN!r} in {PARSER_HOMES}"
    return found


def _add_parser(parser: object, found: dict[str, argparse.ArgumentParser]) -> None:
    if not isinstance(parser, argparse.ArgumentParser):
        return
    found[parser.prog] = parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                _add_parser(sub, found)


def flags_of(prog: str) -> set[str]:
    """The long flags a user can type (hidden ones are not the README's business)."""
    return {option for action in parsers()[prog]._actions if action.help != argparse.SUPPRESS
            for option in action.option_strings if option.startswith("--")}


def env_vars() -> set[str]:
    return {variable for variables in ENV_VARS.values() for variable in variables}


def exit_code_values() -> set[int]:
    return {value for name, value in vars(exit_codes).items() if name.startswith("EXIT_") and isinstance(value, int)}


# -- reading Markdown ------------------------------------------------------------------------


@dataclass(frozen=True)
class Chunk:
    """A fenced code block, or the prose between two headings or fences."""

    fenced: bool
    first_line: int
    text: str
    section: str | None  # the prog whose section (`## \`clover-code serve\``) holds it


def chunks(markdown: str) -> list[Chunk]:
    found: list[Chunk] = []
    lines: list[str] = []
    fenced, start, scope = False, 1, (0, None)  # scope: (heading level, prog) of the section we are in

    def flush(next_start: int) -> None:
        nonlocal lines, start
        if lines:
            found.append(Chunk(fenced, start, "\n".join(lines), scope[1]))
        lines, start = [], next_start

    for number, line in enumerate(markdown.splitlines(), 1):
        heading = None if fenced else HEADING.match(line)
        if line.lstrip().startswith("```") or heading:
            flush(number + 1)
            if heading:
                scope = _section(scope, len(heading[1]), heading[2])
            else:
                fenced = not fenced
            continue
        lines.append(line)
    flush(0)
    return found


def _section(scope: tuple[int, str | None], level: int, title: str) -> tuple[int, str | None]:
    named = next((f"{MAIN} {m}" for m in re.findall(rf"`{MAIN} (\w+)`", title) if f"{MAIN} {m}" in parsers()), None)
    if named:
        return level, named
    return (0, None) if level <= scope[0] else scope


def code_pieces(chunk: Chunk) -> Iterator[tuple[int, str]]:
    """(line number, code) for each inline span of prose, or each logical line of a fenced block:
    a line ending in `\\`, or followed by indented `[--flag]` / `--flag` lines, goes on."""
    if not chunk.fenced:
        for match in SPAN.finditer(chunk.text):
            yield chunk.first_line + chunk.text.count("\n", 0, match.start()), match[1].replace("\n", " ")
        return
    pending: tuple[int, str] | None = None
    for offset, line in enumerate(chunk.text.splitlines()):
        continues = pending is not None and (pending[1].endswith("\\") or re.match(r"\s+\[?--", line))
        if pending is not None and continues:
            pending = (pending[0], pending[1].removesuffix("\\") + " " + line.strip())
            continue
        if pending is not None:
            yield pending
        pending = (chunk.first_line + offset, line)
    if pending is not None:
        yield pending


# -- flags -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class FlagMention:
    flag: str
    prog: str | None  # the parser it must be a flag of; None: any of clover-code's
    line: int
    code: str


def owner(command: str, section: str | None) -> str | None:
    """Whose flags a command holds: a prog, None (a flag named alone outside any subcommand's
    section: any parser's), or FOREIGN (pip, python tools/..., llama-server)."""
    words = ASSIGNMENTS.sub("", command.strip().removeprefix("$ ").lstrip()).split()
    if words[:1] == ["sudo"]:
        words = words[1:]
    if words[:3] in (["python", "-m", "clover_code"], ["python3", "-m", "clover_code"]):
        words = [MAIN, *words[3:]]
    if not words:
        return FOREIGN
    if words[0] == MAIN:
        sub = f"{MAIN} {words[1]}" if len(words) > 1 else MAIN
        return sub if sub in parsers() else MAIN
    return section if words[0].lstrip("[").startswith("--") else FOREIGN


def readme_flags() -> list[FlagMention]:
    mentions: list[FlagMention] = []
    for chunk in chunks(README.read_text(encoding="utf-8")):
        for line, code in code_pieces(chunk):
            for command in COMMAND_SEPARATOR.split(code):
                prog = owner(command, chunk.section)
                if prog != FOREIGN:
                    mentions += [FlagMention(flag, prog, line, code.strip()) for flag in FLAG.findall(command)]
    return mentions


def test_every_flag_the_readme_names_exists():
    every = set().union(*(flags_of(prog) for prog in parsers()))
    wrong = []
    for m in readme_flags():
        allowed = flags_of(m.prog) if m.prog else every
        if m.flag not in allowed:
            defined_by = sorted(prog for prog in parsers() if m.flag in flags_of(prog)) or ["no parser"]
            wrong.append(f"README line {m.line}: `{m.flag}` (in `{m.code}`) is not a flag of "
                         f"{m.prog or 'any clover-code parser'}; defined by: {', '.join(defined_by)}. "
                         "A flag of another program belongs in a command that starts with that program")
    assert wrong == [], "\n".join(wrong)


def test_every_flag_the_code_defines_is_in_the_readme():
    """Each parser's flags, named where they apply; `--help`, which argparse gives every parser,
    only for the main command."""
    mentions = readme_flags()
    missing = [f"{prog} defines `{flag}`, but the README never names it for {prog} (in its section, "
               f"a `{prog} ...` command, or alone outside any subcommand's section)"
               for prog in sorted(parsers()) for flag in sorted(flags_of(prog)) if prog == MAIN or flag != "--help"
               if not any(m.flag == flag and m.prog in (prog, None) for m in mentions)]
    assert missing == [], "\n".join(missing)


def test_the_flags_are_read_from_the_real_parsers():
    assert {MAIN, f"{MAIN} serve", f"{MAIN} eval", f"{MAIN} doctor", f"{MAIN} generate"} <= set(parsers())
    assert {"--task", "--output-format"} <= flags_of(MAIN)
    assert "--port" in flags_of(f"{MAIN} serve") and "--port" not in flags_of(MAIN)


# -- environment variables --------------------------------------------------------------------


def environment_layer() -> tuple[int, set[str]]:
    """The Configuration section's list item of environment variables: (its line, the names)."""
    lines = README.read_text(encoding="utf-8").splitlines()
    start = next((i for i, line in enumerate(lines) if "**the environment**" in line), None)
    assert start is not None, "README: the Configuration list lost its '**the environment**:' item"
    end = next((i for i in range(start + 1, len(lines)) if re.match(r"\s*(\d+\.|$)", lines[i])), len(lines))
    return start + 1, set(re.findall(r"`([A-Z][A-Z0-9_]+)`", " ".join(lines[start:end])))


def test_the_readme_lists_exactly_the_environment_variables_the_code_reads():
    line, listed = environment_layer()
    problems = [f"README line {line} lists `{v}`, which config.ENV_VARS does not read"
                for v in sorted(listed - env_vars())]
    problems += [f"config.ENV_VARS reads `{v}`, which the README's environment layer (line {line}) does not list"
                 for v in sorted(env_vars() - listed)]
    assert problems == [], "\n".join(problems)


def test_every_clover_variable_the_readme_names_exists():
    text = README.read_text(encoding="utf-8")
    named = {(text.count("\n", 0, m.start()) + 1, m[0]) for m in re.finditer(rf"\b{OWN_ENV_PREFIX}[A-Z0-9_]+\b", text)}
    unknown = [f"README line {line}: `{name}` is not in config.ENV_VARS" for line, name in sorted(named)
               if name not in env_vars()]
    assert unknown == [], "\n".join(unknown)


# -- exit codes ------------------------------------------------------------------------------


def exit_code_table() -> dict[str, int]:
    """exit_reason -> code, from the README's table headed `| code | \\`exit_reason\\` | ...`."""
    lines = README.read_text(encoding="utf-8").splitlines()
    header = next((i for i, line in enumerate(lines) if line.startswith("|") and "`exit_reason`" in line), None)
    assert header is not None, "README: no exit-code table (a header row naming `exit_reason`)"
    table: dict[str, int] = {}
    for line in lines[header + 2:]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        table.update((reason, int(cells[0])) for reason in re.findall(r"`(\w+)`", cells[1]))
    return table


def test_the_exit_code_table_is_the_code():
    readme, code = exit_code_table(), dict(exit_codes.EXIT_CODES)
    problems = [f"README's exit-code table names `{r}`, which ui/exit_codes.py's EXIT_CODES lacks"
                for r in sorted(readme.keys() - code.keys())]
    problems += [f"ui/exit_codes.py: `{r}` exits {c}, the README's exit-code table does not name it"
                 for r, c in sorted(code.items()) if r not in readme]
    problems += [f"`{r}`: the README says exit code {readme[r]}, ui/exit_codes.py {code[r]}"
                 for r in sorted(readme.keys() & code.keys()) if readme[r] != code[r]]
    problems += [f"ui/exit_codes.py defines exit code {c}, the README's exit-code table has no row for it"
                 for c in sorted(exit_code_values() - set(readme.values()))]
    assert problems == [], "\n".join(problems)


def test_every_exit_code_the_readme_names_exists():
    text = README.read_text(encoding="utf-8")
    named = [(text.count("\n", 0, m.start()) + 1, int(m[1]))
             for m in re.finditer(r"\bexit(?:s| codes?)? (\d+)\b", text, re.IGNORECASE)]
    unknown = [f"README line {line}: exit code {code} is none of ui/exit_codes.py's" for line, code in named
               if code not in exit_code_values()]
    assert named, "the README names no exit code outside its table"
    assert unknown == [], "\n".join(unknown)


# -- paths and links -------------------------------------------------------------------------


def where_it_would_be(path: str) -> list[Path]:
    """Where a path a doc names would live, if it names a file of ours; [] when it is not ours
    (a playground repository's `numkit/stats.py`, a Harbor task's `tests/test.sh`)."""
    first, _, rest = path.partition("/")
    top = {p.name for p in ROOT.iterdir() if p.is_dir() and not p.name.startswith(".")} - {"tests"}
    packages = {p.name for p in PACKAGE.iterdir() if p.is_dir() and not p.name.startswith("__")}
    places = [PACKAGE / path] if first in packages else []
    if first in top or (first == "tests" and "/" in rest and (ROOT / "tests" / rest.partition("/")[0]).is_dir()):
        places.append(ROOT / path)
    return places


def test_every_path_the_docs_name_exists():
    missing = []
    for doc in DOCS:
        for chunk in chunks(doc.read_text(encoding="utf-8")):
            for line, code in code_pieces(chunk):
                if "://" in code:
                    continue
                missing += [f"{doc.relative_to(ROOT)} line {line}: `{path}` does not exist (in `{code.strip()}`)"
                            for path in PATH.findall(code) if "*" not in path and "..." not in path
                            and (places := where_it_would_be(path)) and not any(p.exists() for p in places)]
    assert missing == [], "\n".join(missing)


def test_every_module_the_map_docs_name_exists():
    """A span that is a module's name alone (`loading.py`), not one inside a command or output."""
    ours = {p.name for top in (PACKAGE, ROOT / "tools", ROOT / "tests") for p in top.rglob("*.py")}
    missing = [f"{doc.relative_to(ROOT)} line {line}: `{code}` is no file of clover_code/, tools/ or tests/"
               for doc in MAP_DOCS for chunk in chunks(doc.read_text(encoding="utf-8")) if not chunk.fenced
               for line, code in code_pieces(chunk) if BARE_FILE.fullmatch(code) and code not in ours]
    assert missing == [], "\n".join(missing)


def slugs(doc: Path) -> set[str]:
    """The anchors GitHub gives a page's headings."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        fenced ^= line.lstrip().startswith("```")
        heading = None if fenced else HEADING.match(line)
        if heading:
            slug = re.sub(r"[^\w\- ]", "", heading[2].strip().lower()).replace(" ", "-")
            found.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
            seen[slug] = seen.get(slug, 0) + 1
    return found


def test_every_relative_link_lands():
    broken = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in LINK.finditer(text):
            target = match[1]
            if re.match(r"[a-z]+:", target):
                continue
            file, _, anchor = target.partition("#")
            path = (doc.parent / file).resolve() if file else doc
            where = f"{doc.relative_to(ROOT)} line {text.count(chr(10), 0, match.start()) + 1}: ({target})"
            if not path.exists():
                broken.append(f"{where}: no such file")
            elif anchor and path.suffix == ".md" and anchor not in slugs(path):
                broken.append(f"{where}: {path.name} has no heading with that anchor")
    assert broken == [], "\n".join(broken)


# -- a product page --------------------------------------------------------------------------


def test_the_readme_names_no_commit():
    text = README.read_text(encoding="utf-8")
    found = [f"README line {text.count(chr(10), 0, m.start()) + 1}: `{m[0]}` looks like a commit id: the "
             "benchmark log and its history go in docs/benchmarks.md" for m in COMMIT_ID.finditer(text)]
    assert found == [], "\n".join(found)


def make_targets() -> dict[str, list[str]]:
    """Makefile target -> the targets and files it depends on."""
    rules = re.findall(r"^([\w.-]+):(?!=)([^\n]*)", (ROOT / "Makefile").read_text(encoding="utf-8"), re.M)
    return {target: deps.split() for target, deps in rules}


def builds_the_venv(target: str, targets: dict[str, list[str]]) -> bool:
    return target == "venv" or any(builds_the_venv(dep, targets) for dep in targets.get(target, []) if dep != target)


def test_the_two_fresh_machine_commands_are_the_makefiles():
    text = README.read_text(encoding="utf-8")
    after = text[text.index("fresh machine"):]
    block = after[after.index("```"):].split("```")[1]
    commands = [line.split("#")[0].split() for line in block.splitlines()[1:] if line.strip()]
    targets = make_targets()
    assert [c[0] for c in commands] == ["make", "make"], f"the fresh-machine block is not two make commands: {block}"
    for _, target, *_ in commands:
        assert target in targets and builds_the_venv(target, targets), f"`make {target}`: no target that builds .venv"
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert f"make {commands[1][1]}" in map(str.strip, ci), ".ci/run does not run the README's test command"
