"""Writes the scripted model sessions tests/e2e/sessions/*.jsonl: one reply per line, tool calls
in the Qwen `<tool_call>{json}</tool_call>` markup. Edit here, then run:

    python tests/e2e/sessions/make_sessions.py
"""
import json
from pathlib import Path

OUT = Path(__file__).resolve().parent


def call(name, **arguments):
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": arguments}) + "\n</tool_call>"


def write(name, replies):
    with open(OUT / f"{name}.jsonl", "w") as f:
        for r in replies:
            f.write(json.dumps({"content": r} if isinstance(r, str) else r) + "\n")


PYTEST = "python -m pytest -q"

write("fix-median", [
    "I'll start by running the test suite to see what fails.\n" + call("run_shell", command=PYTEST),
    "`test_median_even` fails: `median([4, 1, 3, 2])` returns 3 instead of 2.5. "
    "Let me find where `median` is defined.\n" + call("grep", pattern="def median"),
    "It lives in numkit/stats.py. Let me read it.\n" + call("read_file", path="numkit/stats.py"),
    "The bug: for an even number of values `median` returns the upper middle element instead of "
    "the mean of the two middle ones. I'll fix that.\n" + call(
        "edit_file", path="numkit/stats.py",
        old_string="    middle = len(ordered) // 2\n    return ordered[middle]\n",
        new_string="    middle = len(ordered) // 2\n    if len(ordered) % 2:\n        return ordered[middle]\n"
                   "    return (ordered[middle - 1] + ordered[middle]) / 2\n"),
    "Now the tests again.\n" + call("run_shell", command=PYTEST),
    "All tests pass. Let me check what changed before committing.\n" + call("git_status"),
    "Only numkit/stats.py changed. Committing.\n" + call(
        "git_commit", message="Fix median of even-length lists\n\nReturn the mean of the two middle values."),
    "Fixed `median` in `numkit/stats.py`: for an even number of values it now returns the mean of "
    "the two middle values (it returned the upper one). All 6 tests pass and the fix is committed.",
])

SLUGIFY = '''

def slugify(text: str) -> str:
    """Lowercase `text` and join its runs of letters and digits with single hyphens."""
    return _NOT_ALNUM.sub("-", text.lower()).strip("-")
'''
write("add-slugify", [
    "Let me look at the module first.\n" + call("read_file", path="textkit/strings.py"),
    "And how the package exports its functions and how the tests look.\n"
    + call("read_file", path="textkit/__init__.py") + "\n" + call("read_file", path="tests/test_strings.py"),
    "I'll add a compiled pattern next to `_SPACES` and the function at the end of the module.\n" + call(
        "edit_file", path="textkit/strings.py",
        old_string='_SPACES = re.compile(r"\\s+")\n',
        new_string='_SPACES = re.compile(r"\\s+")\n_NOT_ALNUM = re.compile(r"[^a-z0-9]+")\n'),
    call("edit_file", path="textkit/strings.py",
         old_string="    return text[: max(0, width - len(ellipsis))] + ellipsis\n",
         new_string="    return text[: max(0, width - len(ellipsis))] + ellipsis\n" + SLUGIFY),
    "Now the export.\n" + call(
        "write_file", path="textkit/__init__.py",
        content='from textkit.strings import normalize_spaces, slugify, title_case, truncate\n\n'
                '__all__ = ["normalize_spaces", "slugify", "title_case", "truncate"]\n'),
    "And the tests.\n" + call(
        "edit_file", path="tests/test_strings.py",
        old_string="from textkit import normalize_spaces, title_case, truncate\n",
        new_string="from textkit import normalize_spaces, slugify, title_case, truncate\n"),
    call("edit_file", path="tests/test_strings.py",
         old_string='    assert truncate("abcdefghij", 6) == "abc..."\n',
         new_string='    assert truncate("abcdefghij", 6) == "abc..."\n\n\ndef test_slugify():\n'
                    '    assert slugify("Hello, World!") == "hello-world"\n'
                    '    assert slugify("  Many   spaces ") == "many-spaces"\n'
                    '    assert slugify("--edge--") == "edge"\n'
                    '    assert slugify("") == ""\n'),
    "Running the tests.\n" + call("run_shell", command=PYTEST),
    "4 passed. Committing.\n" + call("git_commit", message="Add slugify() with tests"),
    "Added `slugify(text)` to `textkit/strings.py` (lowercase; runs of non-alphanumerics become one "
    "`-`; no leading or trailing `-`), exported it from `textkit`, and added `test_slugify`. "
    "All 4 tests pass; committed.",
])

RENAME_PATCH = """*** Begin Patch
*** Update File: shop/pricing.py
@@
-def calc_total(lines, tax_rate: float = 0.0) -> int:
+def order_total(lines, tax_rate: float = 0.0) -> int:
*** Update File: shop/cart.py
@@
-from shop.pricing import calc_total
+from shop.pricing import order_total
@@
     def total(self) -> int:
-        return calc_total(self.items.values(), self.tax_rate)
+        return order_total(self.items.values(), self.tax_rate)
*** Update File: shop/receipt.py
@@
-    total = pricing.calc_total(cart.items.values(), cart.tax_rate)
+    total = pricing.order_total(cart.items.values(), cart.tax_rate)
*** Update File: tests/test_pricing.py
@@
-from shop.pricing import calc_total, line_price
+from shop.pricing import line_price, order_total
@@
 def test_total_without_tax():
-    assert calc_total([(100, 2), (50, 1)]) == 250
+    assert order_total([(100, 2), (50, 1)]) == 250
@@
 def test_total_with_tax():
-    assert calc_total([(1000, 1)], tax_rate=0.2) == 1200
+    assert order_total([(1000, 1)], tax_rate=0.2) == 1200
*** End Patch"""
write("rename-function", [
    "First, every place that mentions `calc_total`.\n" + call("grep", pattern="calc_total"),
    "Four files use it. I'll read them before changing anything.\n"
    + "\n".join(call("read_file", path=p) for p in
                ("shop/pricing.py", "shop/cart.py", "shop/receipt.py", "tests/test_pricing.py")),
    "I'll rename it in all four files with one patch.\n" + call("apply_patch", patch=RENAME_PATCH),
    "Let me make sure nothing is left.\n" + call("grep", pattern="calc_total"),
    "Nothing left. Running the tests.\n" + call("run_shell", command=PYTEST),
    "All 5 pass. Committing.\n" + call("git_commit", message="Rename calc_total to order_total"),
    "Renamed `calc_total` to `order_total` in `shop/pricing.py` (definition), `shop/cart.py`, "
    "`shop/receipt.py` and `tests/test_pricing.py`. No `calc_total` remains; all 5 tests pass; committed.",
])

# A short session for tests about the runner itself (formats, limits): no slow test runs.
write("quick-fix", [
    "Let me read the module.\n" + call("read_file", path="numkit/stats.py"),
    "`median` returns the upper middle value for even lengths. Fixing it.\n" + call(
        "edit_file", path="numkit/stats.py",
        old_string="    return ordered[middle]\n",
        new_string="    if len(ordered) % 2:\n        return ordered[middle]\n"
                   "    return (ordered[middle - 1] + ordered[middle]) / 2\n"),
    "Checking what changed.\n" + call("run_shell", command="git diff --stat"),
    "Fixed `median` for even-length lists in `numkit/stats.py`.",
])
