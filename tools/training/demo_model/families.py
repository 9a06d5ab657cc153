"""Task families for the demo model: a generated repository, the user's prompt, and the
agent's plan as a list of replies, each a list of tool calls; a plan step may depend on
what earlier tools returned (the grep listing, the test run), so steps are callables.

The families mirror sandbox/: fix a bug a failing test shows (fix-median), add a
function with its test (add-slugify), rename a function across files (rename-function).
Every name, path, body and test varies, so the model must copy them from the prompt and
from tool results instead of remembering them.
"""

from __future__ import annotations

import json
import random
import re
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field

WORDS = ["num", "calc", "stat", "math", "data", "text", "str", "word", "shop", "store", "order", "cart", "bill",
         "price", "item", "stock", "geo", "graph", "time", "date", "log", "file", "path", "net", "web", "mail", "user",
         "acct", "pay", "tax", "fin", "report", "note", "task", "plan", "queue", "ledger", "budget", "metric", "score",
         "grade", "unit"]
SUFFIXES = ("kit", "lib", "tools", "utils", "core", "ops", "box", "", "s", "py")


def package_name(rng: random.Random) -> str:
    name = rng.choice(WORDS) + rng.choice(SUFFIXES)
    return name if len(name) > 2 else name + "kit"


def join_words(rng: random.Random, *pools: tuple[str, ...]) -> str:
    return "_".join(rng.choice(pool) for pool in pools)


@dataclass
class Call:
    name: str
    arguments: dict

    def text(self) -> str:
        return json.dumps({"name": self.name, "arguments": self.arguments}, ensure_ascii=False)


# A step gets the outputs of the previous reply's calls and returns the next reply:
# a list of calls, or a str for the final answer.
Step = Callable[[list[str]], "list[Call] | str"]


@dataclass
class Task:
    family: str
    files: dict[str, str]
    prompt: str
    steps: list[Step] = field(default_factory=list)


def wrap(text: str, rng: random.Random) -> str:
    return "\n".join(textwrap.fill(p, width=rng.randint(78, 96)) for p in text.split("\n"))


PYTEST = "python -m pytest -q --tb=short"


def passed_count(output: str) -> str:
    m = re.search(r"(\d+) passed", output)
    return m.group(1) if m else "all"


# -- fix-bug ------------------------------------------------------------------------------

@dataclass
class Bug:
    """One numeric function: its code (with {v} names), the buggy line and its fix, tests."""

    name: str
    params: str
    body: list[str]  # lines of the correct body
    bad: str  # the buggy version of the line `fix_line` points at
    fix_line: int  # index in body
    tests: list[tuple[str, str]]  # (test suffix, assert line) ; the first one fails on the bug
    why: str  # for the final answer
    commit: str


def numeric_functions(v: dict[str, str]) -> list[Bug]:
    xs, o, m = v["xs"], v["ordered"], v["mid"]
    return [
        Bug("mean", xs, [f"    if not {xs}:", '        raise ValueError("mean of an empty list")',
                         f"    return sum({xs}) / len({xs})"],
            f"    return sum({xs}) / (len({xs}) - 1)", 2,
            [("", "    assert mean([1, 2, 3, 4]) == 2.5"), ("_single", "    assert mean([7]) == 7")],
            "it divided by one less than the number of values", "Fix mean dividing by n - 1"),
        Bug("median", xs, [f"    if not {xs}:", '        raise ValueError("median of an empty list")',
                           f"    {o} = sorted({xs})", f"    {m} = len({o}) // 2",
                           f"    if len({o}) % 2 == 0:\n        return ({o}[{m} - 1] + {o}[{m}]) / 2\n"
                           f"    return {o}[{m}]"],
            f"    return {o}[{m}]", 4,
            [("_even", "    assert median([4, 1, 3, 2]) == 2.5"), ("_odd", "    assert median([3, 1, 2]) == 2")],
            "for an even number of values it returned the upper middle value instead of "
            "the mean of the two middle ones", "Fix median of an even-length list"),
        Bug("mode", xs, [f"    if not {xs}:", '        raise ValueError("mode of an empty list")',
                         f"    counts = Counter({xs})", "    best = max(counts.values())",
                         "    return min(v for v, n in counts.items() if n == best)"],
            "    return max(v for v, n in counts.items() if n == best)", 4,
            [("_prefers_smallest", "    assert mode([1, 2, 2, 3, 3]) == 2"),
             ("_single", "    assert mode([5, 5, 1]) == 5")],
            "on a tie it returned the largest value instead of the smallest", "Fix mode on ties"),
        Bug("clamp", "value, low, high", ["    return max(low, min(high, value))"],
            "    return min(low, max(high, value))", 0,
            [("_high", "    assert clamp(15, 0, 10) == 10"), ("_low", "    assert clamp(-1, 0, 10) == 0")],
            "it had min and max swapped", "Fix clamp bounds"),
        Bug("spread", xs, [f"    return max({xs}) - min({xs})"], f"    return min({xs}) - max({xs})", 0,
            [("", "    assert spread([3, 9, 4]) == 6"), ("_same", "    assert spread([2, 2]) == 0")],
            "it subtracted the maximum from the minimum", "Fix spread sign"),
        Bug("total", xs, [f"    return sum({xs})"], f"    return sum({xs}, 1)", 0,
            [("", "    assert total([1, 2, 3]) == 6"), ("_empty", "    assert total([]) == 0")],
            "it started the sum at 1 instead of 0", "Fix total starting at 1"),
        Bug("count_above", f"{xs}, limit", [f"    return sum(1 for x in {xs} if x > limit)"],
            f"    return sum(1 for x in {xs} if x >= limit)", 0,
            [("", "    assert count_above([1, 5, 7], 5) == 1"), ("_none", "    assert count_above([1, 2], 9) == 0")],
            "it counted values equal to the limit too", "Fix count_above counting the limit"),
        Bug("percent", "part, whole", ["    return 100 * part / whole"], "    return part / whole", 0,
            [("", "    assert percent(1, 4) == 25"), ("_full", "    assert percent(3, 3) == 100")],
            "it returned a fraction instead of a percentage", "Fix percent scale"),
    ]


def bug_tests(bug: Bug, rng: random.Random) -> list[tuple[str, list[str]]]:
    """A function's tests as (name, lines), laid out as hand-written suites vary: in either
    order, sometimes both asserts in one test, sometimes an extra empty-input test: sandbox
    fix-median's suite has all three, and generated suites used to have one layout only."""
    tests = [(f"test_{bug.name}{suffix}", [line]) for suffix, line in bug.tests]
    if rng.random() < 0.25:
        tests = [(f"test_{bug.name}", [line for _, lines in tests for line in lines])]
    elif rng.random() < 0.4:
        tests.reverse()
    if "raise ValueError" in "\n".join(bug.body) and rng.random() < 0.3:
        tests.append((f"test_{bug.name}_empty", ["    with pytest.raises(ValueError):", f"        {bug.name}([])"]))
    return tests


def fix_bug(rng: random.Random) -> Task:
    pkg = "numkit" if rng.random() < 0.15 else package_name(rng)
    mod = rng.choice(("stats", "stats", "ops", "calc", "numeric", "summary", "measures", "math_utils"))
    names = {"xs": rng.choice(("values", "values", "numbers", "items", "data", "xs", "nums")),
             "ordered": rng.choice(("ordered", "ordered", "sorted_values", "ranked", "s")),
             "mid": rng.choice(("middle", "middle", "mid", "half", "center"))}
    pool = numeric_functions(names)
    chosen = rng.sample(pool, rng.randint(3, 5))
    bug = rng.choice(chosen)
    chosen.sort(key=lambda b: pool.index(b))  # the order of the pool, like a hand-written module
    summary = rng.choice(("Summary statistics over plain lists of numbers.", "Small numeric helpers.",
                          "Numbers in, numbers out."))
    code = [f'"""{summary}"""', ""]
    if any(b.name == "mode" for b in chosen):
        code += ["from collections import Counter", ""]
    for b in chosen:
        body = list(b.body)
        if b is bug:
            body[b.fix_line] = b.bad
        code += ["", f"def {b.name}({b.params}):", *body, ""]
    module = "\n".join(code).strip() + "\n"
    test_lines = ["import pytest", "", f"from {pkg} import {', '.join(sorted(b.name for b in chosen))}", ""]
    for b in chosen:
        for name, lines in bug_tests(b, rng):
            test_lines += ["", f"def {name}():", *lines, ""]
    files = {
        f"{pkg}/__init__.py": f"from {pkg}.{mod} import {', '.join(sorted(b.name for b in chosen))}\n\n"
                              f"__all__ = [{', '.join(json.dumps(name) for name in sorted(b.name for b in chosen))}]\n",
        f"{pkg}/{mod}.py": module,
        f"tests/test_{mod}.py": "\n".join(test_lines).strip() + "\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    }
    prompt = wrap(f"The test suite fails: `python -m pytest -q` reports a failure in tests/test_{mod}.py.\n"
                  f"Find the bug in the {pkg} package and fix it there (do not change the tests). "
                  "Run the tests to confirm they pass, then commit the fix.", rng)
    path = f"{pkg}/{mod}.py"
    state: dict[str, str] = {}
    # The failing test names the function; grep names its file. Each step copies from the
    # tool result just before it, which a small model learns far sooner than composing a
    # path from the package in the prompt and the module in a test file's name.
    return Task("fix-bug", files, prompt, [
        lambda out: [Call("run_shell", {"command": PYTEST})],
        lambda out: [Call("grep", {"pattern": f"def {bug.name}", "files_only": True})],
        lambda out: [Call("read_file", {"path": out[0].splitlines()[0]})],
        lambda out: [Call("edit_file", {"path": path, "old_string": bug.bad, "new_string": bug.body[bug.fix_line]})],
        lambda out: [Call("run_shell", {"command": PYTEST})],
        lambda out: (state.update(passed=passed_count(out[0])), [Call("git_commit", {"message": bug.commit})])[1],
        lambda out: f"Fixed `{bug.name}` in {path}: {bug.why}. The tests pass ({state['passed']} passed) "
                    "and the fix is committed.",
    ])


# -- add-function ---------------------------------------------------------------------------

@dataclass
class NewFunction:
    name: str
    signature: str
    spec: str  # what the prompt says it does
    example: str
    body: list[str]
    test: list[str]


NEW_FUNCTIONS = [
    NewFunction("slugify", "slugify(text: str) -> str",
                'it lowercases the text, turns every run of characters that are not letters or digits '
                'into a single "-", and strips "-" from both ends',
                'slugify("Hello, World!") == "hello-world"',
                ['    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")'],
                ['    assert slugify("Hello, World!") == "hello-world"', '    assert slugify("  A  b ") == "a-b"']),
    NewFunction("count_vowels", "count_vowels(text: str) -> int",
                "it counts the vowels (a, e, i, o, u, in either case) in the text",
                'count_vowels("Hello World") == 3',
                ['    return sum(1 for ch in text.lower() if ch in "aeiou")'],
                ['    assert count_vowels("Hello World") == 3', '    assert count_vowels("xyz") == 0']),
    NewFunction("reverse_words", "reverse_words(text: str) -> str",
                "it returns the words of the text in reverse order, separated by single spaces",
                'reverse_words("one two  three") == "three two one"',
                ['    return " ".join(reversed(text.split()))'],
                ['    assert reverse_words("one two  three") == "three two one"',
                 '    assert reverse_words("") == ""']),
    NewFunction("initials", "initials(text: str) -> str",
                "it returns the first letter of each word, upper-cased, joined together",
                'initials("ada lovelace") == "AL"',
                ['    return "".join(word[0].upper() for word in text.split())'],
                ['    assert initials("ada lovelace") == "AL"', '    assert initials("") == ""']),
    NewFunction("is_palindrome", "is_palindrome(text: str) -> bool",
                "it tells whether the text reads the same backwards, ignoring case and every "
                "character that is not a letter or digit",
                'is_palindrome("Never odd or even") is True',
                ['    cleaned = [ch.lower() for ch in text if ch.isalnum()]', '    return cleaned == cleaned[::-1]'],
                ['    assert is_palindrome("Never odd or even") is True', '    assert is_palindrome("abc") is False']),
    NewFunction("snake_case", "snake_case(text: str) -> str",
                'it lowercases the text and joins its words with "_"',
                'snake_case("Hello Big World") == "hello_big_world"',
                ['    return "_".join(text.lower().split())'],
                ['    assert snake_case("Hello Big World") == "hello_big_world"', '    assert snake_case("x") == "x"']),
    NewFunction("count_words", "count_words(text: str) -> int",
                "it counts the words of the text, a word being a run of characters without whitespace",
                'count_words("a bc  d") == 3',
                ["    return len(text.split())"],
                ['    assert count_words("a bc  d") == 3', '    assert count_words("   ") == 0']),
    NewFunction("strip_digits", "strip_digits(text: str) -> str",
                "it removes every digit from the text",
                'strip_digits("r2d2 c3po") == "rd cpo"',
                ['    return "".join(ch for ch in text if not ch.isdigit())'],
                ['    assert strip_digits("r2d2 c3po") == "rd cpo"', '    assert strip_digits("42") == ""']),
]

EXISTING = [
    ("normalize_spaces", "normalize_spaces(text: str) -> str",
     "Collapse runs of whitespace into one space and trim both ends.",
     ['    return _SPACES.sub(" ", text).strip()'], ['    assert normalize_spaces("  a \\t b\\n c ") == "a b c"']),
    ("title_case", "title_case(text: str) -> str", "Capitalize each word, keeping the rest of the word as it is.",
     ['    return " ".join(word[:1].upper() + word[1:] for word in normalize_spaces(text).split(" "))'],
     ['    assert title_case("hello  wide world") == "Hello Wide World"']),
    ("truncate", 'truncate(text: str, width: int, ellipsis: str = "...") -> str',
     "Cut text to at most `width` characters, marking the cut with `ellipsis`.",
     ["    if len(text) <= width:", "        return text",
      "    return text[: max(0, width - len(ellipsis))] + ellipsis"],
     ['    assert truncate("abcdef", 10) == "abcdef"', '    assert truncate("abcdefghij", 6) == "abc..."']),
    ("shout", "shout(text: str) -> str", "Upper-case the text and end it with an exclamation mark.",
     ['    return text.upper() + "!"'], ['    assert shout("hi") == "HI!"']),
    ("first_line", "first_line(text: str) -> str", "The text up to its first line break.",
     ["    return text.split(\"\\n\", 1)[0]"], ['    assert first_line("a\\nb") == "a"']),
    ("pad_left", "pad_left(text: str, width: int) -> str", "Right-align the text in `width` columns.",
     ["    return text.rjust(width)"], ['    assert pad_left("ab", 4) == "  ab"']),
]


def add_function(rng: random.Random) -> Task:
    pkg = "textkit" if rng.random() < 0.15 else package_name(rng)
    mod = rng.choice(("strings", "strings", "text", "words", "helpers", "fmt"))
    new = rng.choice(NEW_FUNCTIONS)
    existing = [EXISTING[0]] + rng.sample(EXISTING[1:], rng.randint(1, 3))
    existing.sort(key=EXISTING.index)
    names = [e[0] for e in existing]
    code = [f'"""{rng.choice(("Small string helpers.", "Text utilities.", "Helpers for strings."))}"""', "",
            "import re", "", '_SPACES = re.compile(r"\\s+")', ""]
    for _name, sig, doc, body, _ in existing:
        code += ["", f"def {sig}:", f'    """{doc}"""', *body, ""]
    module = "\n".join(code).strip() + "\n"
    tests = [f"from {pkg} import {', '.join(names)}", ""]
    for name, _, _, _, asserts in existing:
        tests += ["", f"def test_{name}():", *asserts, ""]
    test_text = "\n".join(tests).strip() + "\n"
    init = f"from {pkg}.{mod} import {', '.join(names)}\n\n__all__ = [{', '.join(json.dumps(n) for n in names)}]\n"
    files = {f"{pkg}/__init__.py": init, f"{pkg}/{mod}.py": module, f"tests/test_{mod}.py": test_text,
             "README.md": f"# {pkg}\n\nString helpers: {', '.join(f'`{n}`' for n in names)}.\n",
             ".gitignore": "__pycache__/\n.pytest_cache/\n"}
    prompt = wrap(f"Add a function `{new.signature}` to {pkg}/{mod}.py: {new.spec}. For example {new.example}. "
                  f"Export it from {pkg}/__init__.py, add tests for it to tests/test_{mod}.py, "
                  "run the tests, then commit.", rng)
    last_code = module.rstrip("\n").split("\n")[-1]
    last_test = test_text.rstrip("\n").split("\n")[-1]
    import_line = test_text.split("\n")[0]
    new_names = names + [new.name]
    new_init = (f"from {pkg}.{mod} import {', '.join(new_names)}\n\n"
                f"__all__ = [{', '.join(json.dumps(n) for n in new_names)}]\n")
    func = "\n".join([f"def {new.signature}:", *new.body])
    test = "\n".join([f"def test_{new.name}():", *new.test])
    state: dict[str, str] = {}
    return Task("add-function", files, prompt, [
        lambda out: [Call("read_file", {"path": f"{pkg}/{mod}.py"}), Call("read_file", {"path": f"{pkg}/__init__.py"}),
                     Call("read_file", {"path": f"tests/test_{mod}.py"})],
        lambda out: [Call("edit_file", {"path": f"{pkg}/{mod}.py", "old_string": last_code,
                                        "new_string": f"{last_code}\n\n\n{func}"}),
                     Call("write_file", {"path": f"{pkg}/__init__.py", "content": new_init}),
                     Call("edit_file", {"path": f"tests/test_{mod}.py", "old_string": import_line,
                                        "new_string": f"{import_line}, {new.name}"}),
                     Call("edit_file", {"path": f"tests/test_{mod}.py", "old_string": last_test,
                                        "new_string": f"{last_test}\n\n\n{test}"})],
        lambda out: [Call("run_shell", {"command": PYTEST})],
        lambda out: (state.update(passed=passed_count(out[0])),
                     [Call("git_commit", {"message": f"Add {new.name} with tests"})])[1],
        lambda out: f"Added `{new.name}` to {pkg}/{mod}.py, exported it from {pkg}/__init__.py and tested it in "
                    f"tests/test_{mod}.py. The tests pass ({state['passed']} passed) and the change is committed.",
    ])


# -- rename ---------------------------------------------------------------------------------

VERBS = ("calc", "get", "compute", "make", "build", "fetch", "load", "find", "count", "format", "parse", "check")
NOUNS = ("total", "price", "tax", "sum", "rate", "score", "label", "name", "summary", "report", "cost", "fee")
NEW_PREFIX = ("order", "item", "line", "cart", "final", "net", "full", "base", "unit", "gross")


def rename(rng: random.Random) -> Task:
    pkg = "shop" if rng.random() < 0.15 else package_name(rng)
    old = join_words(rng, VERBS, NOUNS)
    new = join_words(rng, NEW_PREFIX, NOUNS)
    while new == old or old in new or new in old:
        new = join_words(rng, NEW_PREFIX, NOUNS)
    helper = join_words(rng, VERBS, NOUNS)
    while helper in (old, new) or old in helper or helper in old:
        helper = join_words(rng, VERBS, NOUNS)
    home, user1, user2 = rng.sample(("pricing", "cart", "receipt", "orders", "billing", "models", "core", "report"), 3)
    files = {
        f"{pkg}/__init__.py": "",
        f"{pkg}/{home}.py": f'"""{home.title()} functions."""\n\n\ndef {helper}(a: int, b: int) -> int:\n'
                            f"    return a * b\n\n\ndef {old}(lines, rate: float = 0.0) -> int:\n"
                            f'    """Sum of a * b over lines, plus rate."""\n'
                            f"    subtotal = sum({helper}(a, b) for a, b in lines)\n"
                            f"    return round(subtotal * (1 + rate))\n",
        f"{pkg}/{user1}.py": f"from {pkg}.{home} import {old}\n\n\ndef {user1}_value(lines) -> int:\n"
                             f"    return {old}(lines)\n",
        f"tests/test_{home}.py": f"from {pkg}.{home} import {helper}, {old}\n\n\ndef test_{helper}():\n"
                                 f"    assert {helper}(250, 4) == 1000\n\n\ndef test_{old}():\n"
                                 f"    assert {old}([(100, 2), (50, 1)]) == 250\n",
        ".gitignore": "__pycache__/\n.pytest_cache/\n",
    }
    if rng.random() < 0.6:
        files[f"{pkg}/{user2}.py"] = (f"from {pkg} import {home}\n\n\ndef {user2}_text(lines) -> str:\n"
                                      f"    return str({home}.{old}(lines, 0.1))\n")
    if rng.random() < 0.5:
        files[f"tests/test_{user1}.py"] = (f"from {pkg}.{user1} import {user1}_value\n\n\ndef test_{user1}_value():\n"
                                           f"    assert {user1}_value([(3, 3)]) == 9\n")
    if rng.random() < 0.4:
        files["README.md"] = f"# {pkg}\n\nUse `{old}` to add up order lines.\n"
    prompt = wrap(f"Rename the function `{old}` in the {pkg} package to `{new}`, everywhere: "
                  "its definition, every import and call site, and the tests. "
                  f"No `{old}` may remain. Run the tests, then commit.", rng)
    state: dict[str, str] = {}

    def sed(out: list[str]) -> list[Call]:
        paths = [line for line in out[0].splitlines() if line and not line.startswith("[")]
        return [Call("run_shell", {"command": f"sed -i 's/{old}/{new}/g' {' '.join(paths)}"}),
                Call("run_shell", {"command": PYTEST})]

    return Task("rename", files, prompt, [
        lambda out: [Call("grep", {"pattern": old, "files_only": True})],
        sed,
        lambda out: (state.update(passed=passed_count(out[1])),
                     [Call("git_commit", {"message": f"Rename {old} to {new}"})])[1],
        lambda out: f"Renamed `{old}` to `{new}` everywhere in the {pkg} package and its tests. "
                    f"The tests pass ({state['passed']} passed) and the change is committed.",
    ])


FAMILIES = {"fix-bug": fix_bug, "add-function": add_function, "rename": rename}
