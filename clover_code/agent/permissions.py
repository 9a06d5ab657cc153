"""Which tool calls may run without asking: approval modes plus allow rules.

Modes:
    plan       reads run; edits, shell and git writes are refused; the model ends with a plan
               (its old name `read-only` is still accepted, settings.MODE_ALIASES)
    ask        reads run; edits, shell and git writes ask the user
    auto-edit  reads and edits run; shell and git writes ask
    full-auto  everything runs, never asks (the shell stays sandboxed)
Allow rules `KIND:PATTERN` (KIND a tool kind or a tool name) let matching calls run
without asking in `ask` and `auto-edit`: `shell:pytest*` matches each simple command of
the command line (split at ; && || | & and newlines); a command line that substitutes
commands (`$(...)`, backticks, `<(...)`, `>(...)`), opens a subshell or redirects output
to a file always asks. `edit:src/**` matches every path the edit writes (after symlinks),
`git:*` any git tool (matched by tool name, with and without a `git_` prefix). What a call
writes or runs is what its tool declares (clover_code.tools.touches), never guessed from
argument keys; a tool that declares nothing is covered only by a rule naming it, `NAME:*`.
An MCP server's tool (`mcp__SERVER__TOOL`) is also covered by `mcp:SERVER/TOOL` and `mcp:SERVER/*`.
Rules come from settings and from "always" answers of this session; never from anything
stored in the workspace.
"""

from __future__ import annotations

import fnmatch
import os
import posixpath
import re
import shlex
from typing import Literal, Protocol

from clover_code.agent.events import ApprovalNeeded
from clover_code.settings import APPROVAL_MODES, ApprovalMode, approval_mode
from clover_code.tools import ToolKind
from clover_code.tools.mcp.naming import RULE_KIND, rule_subject
from clover_code.tools.touches import Touches

Decision = Literal["allow", "ask", "deny"]

# Per mode, what happens to each tool kind when no allow rule matches.
_MODE_TABLE: dict[ApprovalMode, dict[ToolKind, Decision]] = {
    "plan": {"read": "allow", "edit": "deny", "shell": "deny", "git": "deny"},
    "ask": {"read": "allow", "edit": "ask", "shell": "ask", "git": "ask"},
    "auto-edit": {"read": "allow", "edit": "allow", "shell": "ask", "git": "ask"},
    "full-auto": {"read": "allow", "edit": "allow", "shell": "allow", "git": "allow"},
}
_SUBCOMMAND = re.compile(r"^[A-Za-z][\w-]*$")


class Approver(Protocol):
    async def __call__(self, request: ApprovalNeeded) -> str:
        """"yes" | "always" | "no"."""
        ...


class ModeApprover:
    """For headless runs, where no one can answer: `answer` every question (default "no").

    In full-auto the agent never asks; in other modes a question means the call is
    declined and the model is told so."""

    def __init__(self, answer: str = "no"):
        self.answer = answer
        self.asked: list[ApprovalNeeded] = []

    async def __call__(self, request: ApprovalNeeded) -> str:
        self.asked.append(request)
        return self.answer


def approver_for_mode(mode: str) -> ModeApprover:
    return ModeApprover("yes" if mode == "full-auto" else "no")


def sandboxed(mode: ApprovalMode, chosen: bool) -> bool:
    """Whether commands run in the sandbox: as the user chose, and always in full-auto, which
    never asks."""
    return chosen or mode == "full-auto"


def written_paths(touches: Touches, root: str | None = None) -> list[str]:
    """What an edit rule is matched against: the paths the call writes, as rules are written."""
    return [_normal_path(p, root) for p in touches.writes]


def _normal_path(path: str, root: str | None = None) -> str:
    """Relative to the workspace root, as rules are written; with a root, where the write
    really lands (through symlinks), so `src/link -> ../setup.py` is not under `src/`."""
    path = posixpath.normpath(path.strip().replace("\\", "/"))
    if not root:
        return path
    real_root = os.path.realpath(root)
    real = os.path.realpath(os.path.join(real_root, path))
    if real == real_root:
        return "."
    return posixpath.relpath(real, real_root) if real.startswith(real_root.rstrip("/") + "/") else real


def glob_literal(text: str) -> str:
    """`text` as an fnmatch pattern matching only itself: `*`, `?` and `[` bracketed."""
    return "".join(f"[{c}]" if c in "*?[" else c for c in text)


def rule_for_always(kind: ToolKind, name: str, touches: Touches, root: str | None = None) -> str:
    """The rule an "always" answer adds: narrow enough to say what it allows. The command or
    folder it names is matched literally (approving `ls *` does not allow everything)."""
    if (subject := rule_subject(name)) is not None:
        return f"{RULE_KIND}:{glob_literal(subject)}"
    if not touches.known or (kind == "edit" and not touches.writes):
        return f"{name}:*"  # nothing narrower is known: this tool only
    if kind == "shell":
        words = _first_command_words(touches.runs or "")
        # A program, with its subcommand when it has one (`git commit`, `npm run`), not its files.
        prefix = words[:2] if len(words) > 1 and _SUBCOMMAND.match(words[1]) else words[:1]
        return f"shell:{glob_literal(' '.join(prefix))}*" if prefix else "shell:"
    if kind == "edit":
        dirs = {posixpath.dirname(p) for p in written_paths(touches, root)}
        if len(dirs) == 1 and (d := dirs.pop()) not in ("", "."):
            return f"edit:{glob_literal(d)}/**"
        return "edit:*"
    return f"{kind}:{name}"


class Permissions:
    def __init__(self, mode: ApprovalMode = "ask", rules: list[str] | None = None, root: str | None = None):
        """`root`: the workspace root, so absolute paths inside it match relative rules."""
        known = approval_mode(mode)  # an old name (read-only) is read as its mode
        if known is None:
            raise ValueError(f"approval mode {mode!r} is not one of {', '.join(APPROVAL_MODES)}")
        self.mode: ApprovalMode = known
        self.root = str(root) if root else None
        self.rules: list[str] = []
        for rule in rules or ():
            self.add_rule(rule)

    def add_rule(self, rule: str) -> None:
        if ":" not in rule:
            raise ValueError(f"allow rule {rule!r} must look like KIND:PATTERN, e.g. shell:pytest*")
        if rule not in self.rules:
            self.rules.append(rule)

    def decide(self, name: str, kind: ToolKind, touches: Touches) -> Decision:
        decision = _MODE_TABLE[self.mode][kind]
        if decision == "ask" and self.allowed_by_rule(name, kind, touches):
            return "allow"
        return decision

    def allowed_by_rule(self, name: str, kind: ToolKind, touches: Touches) -> bool:
        if (subject := rule_subject(name)) is not None and self._mcp_allows(subject):
            return True
        if not touches.known:  # it may read, write or run anything: only a rule naming it vouches
            return f"{name}:*" in self.rules
        patterns = [p for head, _, p in (r.partition(":") for r in self.rules) if head in (kind, name)]
        if not patterns:
            return False
        subjects: list[str] | None
        if kind == "shell":
            subjects = shell_commands(touches.runs or "")
        elif kind == "edit":
            subjects = written_paths(touches, self.root)
        else:
            return any(fnmatch.fnmatchcase(n, p) for n in {name, name.removeprefix("git_")} for p in patterns)
        return bool(subjects) and all(any(fnmatch.fnmatchcase(s, p) for p in patterns) for s in subjects or ())


    def _mcp_allows(self, subject: str) -> bool:
        """An `mcp:SERVER/TOOL` or `mcp:SERVER/*` rule covers the MCP tool `subject` names."""
        patterns = [p for head, _, p in (r.partition(":") for r in self.rules) if head == RULE_KIND]
        return any(fnmatch.fnmatchcase(subject, p) for p in patterns)


# -- reading a command line -------------------------------------------------------------
#
# shlex splits words and quotes as bash does and returns runs of the characters below as
# operator tokens. A quoted word that looks like an operator (`echo ";"`) is read as one:
# that only ever makes a call ask, never run unasked.

_OPERATOR_CHARS = "();<>|&\n"
_SEPARATOR_CHARS = frozenset(";|&\n")
_SUBSTITUTIONS = ("$(", "`")  # expand even inside double quotes, so looked for anywhere
_DESCRIPTOR = re.compile(r"^(?:\d+|-)$")
_NULL_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<", "<>"})


def shell_commands(command: str) -> list[str] | None:
    """The simple commands of a command line, each matched on its own so `pytest; rm -rf ~`
    is not allowed by `shell:pytest*`; None when it substitutes commands, opens a subshell
    or redirects output to a file (never auto-allowed)."""
    if any(s in command for s in _SUBSTITUTIONS):
        return None
    tokens = _shell_tokens(command)
    if tokens is None:
        return None
    commands: list[str] = []
    words: list[str] = []
    i = 0
    while i < len(tokens):
        token = tokens[i]
        if not _is_operator(token):
            words.append(token)
        elif set(token) <= _SEPARATOR_CHARS:
            commands.append(" ".join(words))
            words = []
        elif _harmless_redirect(token, tokens[i + 1] if i + 1 < len(tokens) else None):
            i += 1  # its target is not a word of the command
        else:
            return None
        i += 1
    commands.append(" ".join(words))
    return [c for c in commands if c.strip()]


def _shell_tokens(command: str) -> list[str] | None:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=_OPERATOR_CHARS)
    lexer.whitespace = " \t"  # a newline ends a command, as `;` does
    lexer.whitespace_split = True
    lexer.commenters = ""  # text after `#` is still looked at (it may hide a second line)
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote
        return None


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in _OPERATOR_CHARS for c in token)


def _harmless_redirect(operator: str, target: str | None) -> bool:
    """`2>&1`, `>&-`, anything to or from /dev/null, and input from a file: nothing is
    written, no command is run. Every other redirection (`> f`, `>> f`, heredocs) asks."""
    if target is None or _is_operator(target):
        return False
    if operator in (">&", "<&"):
        return bool(_DESCRIPTOR.match(target))
    if operator in _NULL_REDIRECTS and target == "/dev/null":
        return True
    return operator == "<"


def _first_command_words(command: str) -> list[str]:
    """The words of the first simple command, as shlex reads them."""
    words = []
    for token in _shell_tokens(command) or command.split():
        if _is_operator(token):
            break
        words.append(token)
    return words
