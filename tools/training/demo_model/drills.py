"""Copy drills: short sessions whose calls are mostly copies of what the model just read.

The task families reward remembering: their names come from small pools, and a small model
learns the pools long before it learns to copy (run F: no name it had not memorised was ever
copied, even with only the name masked and the rest of the call given). A copy circuit
(attention that finds a span in the prompt or a tool result and repeats it) forms only
under a dense copy signal: in a 4-layer model, after some 5,000 sequences that are half
copies. A drill is one edit of one line of a generated module: the path comes from the
prompt, the line to replace from the file read just before, the new line is that line with
one expression changed. Run through the real tools like the families (tools/training/demo_model/sessions.py).
"""

from __future__ import annotations

import random

from tools.training.demo_model.families import NOUNS, VERBS, WORDS, Call, Task, join_words, package_name, wrap

OPERATORS = {"+": "add", "-": "subtract", "*": "multiply", "//": "floor-divide", "%": "take the remainder of"}


def drill_function(rng: random.Random, name: str) -> tuple[list[str], list[tuple[str, str, str, str]]]:
    """A function's lines and its assignment lines as (local, left operand, operator, right operand)."""
    params = rng.sample(WORDS, rng.randint(2, 3))
    names = list(params)
    lines, assigns = [f"def {name}({', '.join(params)}):"], []
    for local in rng.sample([w for w in WORDS if w not in params], rng.randint(1, 3)):
        left, right = rng.choice(names), rng.choice(names + [str(rng.randint(2, 99))])
        op = rng.choice(sorted(OPERATORS))
        lines.append(f"    {local} = {left} {op} {right}")
        assigns.append((local, left, op, right))
        names.append(local)
    lines.append(f"    return {names[-1]}")
    return lines, assigns


def edit_line(rng: random.Random) -> Task:
    pkg, mod = package_name(rng), rng.choice(WORDS + list(NOUNS))
    functions, count = [], rng.randint(2, 4)
    while len(functions) < count:
        name = join_words(rng, VERBS, NOUNS)
        if name not in [f for f, _, _ in functions]:
            functions.append((name, *drill_function(rng, name)))
    fn, _lines, assigns = rng.choice(functions)
    local, left, op, right = rng.choice(assigns)
    new_op = rng.choice(sorted(set(OPERATORS) - {op}))
    old_line, new_line = f"    {local} = {left} {op} {right}", f"    {local} = {left} {new_op} {right}"
    path = f"{pkg}/{mod}.py"
    module = "\n\n\n".join("\n".join(lines) for _, lines, _ in functions) + "\n"
    if module.count(old_line) != 1:  # the edit must name one place
        return edit_line(rng)
    prompt = wrap(rng.choice((
        f"In {path}, `{fn}` should {OPERATORS[new_op]} where it computes `{local}`, not {OPERATORS[op]}. Fix it.",
        f"`{local}` in `{fn}` ({path}) is wrong: use `{new_op}` instead of `{op}`.",
        f"Change the line of `{fn}` in {path} that sets `{local}` so it uses `{new_op}`.")), rng)
    return Task("edit-line", {path: module, f"{pkg}/__init__.py": "", ".gitignore": "__pycache__/\n"}, prompt, [
        lambda out: [Call("read_file", {"path": path})],
        lambda out: [Call("edit_file", {"path": path, "old_string": old_line, "new_string": new_line})],
        lambda out: f"Changed `{fn}` in {path}: `{local}` is now `{left} {new_op} {right}`.",
    ])


DRILLS = {"edit-line": edit_line}
