"""symbols and repo_map: tree-sitter tags per language, ranking, budget, caching, on real temp repos."""

import os
from pathlib import Path

import pytest

from clover_code.engine import estimate_tokens
from clover_code.tools import Registry, ToolContext
from clover_code.tools.code import TOOLS as CODE_TOOLS
from clover_code.tools.code import CodeMaps, RepoMap, Symbols
from clover_code.tools.codemap.ranking import CACHE_FILE, CodeMap
from clover_code.tools.codemap.tags import extract, language_for
from clover_code.tools.search import TOOLS as SEARCH_TOOLS
from clover_code.tools.workspace import Workspace

TOOLS = [*CODE_TOOLS, *SEARCH_TOOLS]

SAMPLES = {
    "shapes.py": (
        "import math\n\nMAX_SIDES = 12\n\nclass Shape(Base):\n    def area(self) -> float:\n"
        "        return math.sqrt(compute_area(self))\n\ndef make_shape(kind: Kind) -> Shape:\n    return Shape()\n",
        {"MAX_SIDES", "Shape", "area", "make_shape"}, {"compute_area", "sqrt", "Base", "Kind"},
    ),
    "widget.js": (
        "import { paint } from './paint.js';\n"
        "export class Widget extends Base {\n  draw() { paint(this); this.canvas.flush(); }\n}\n"
        "function render(w) { return new Widget(); }\nconst handler = (e) => render(e);\n",
        {"Widget", "draw", "render", "handler"}, {"paint", "flush", "Base"},
    ),
    "square.ts": (
        "export interface Shape { area(): number }\nexport type Id = string;\nenum Color { Red }\n"
        "export class Square implements Shape { area(): number { return side(this) } }\n"
        "export function makeSquare(id: Id): Square { return new Square() }\n",
        {"Shape", "area", "Id", "Color", "Square", "makeSquare"}, {"side", "Shape", "Id"},
    ),
    "view.tsx": (
        "export function Panel(props: PanelProps) { return <div>{format(props)}</div> }\n",
        {"Panel"}, {"format", "PanelProps"},
    ),
    "server.go": (
        "package srv\n\ntype Server struct { Addr string }\n\ntype Handler interface { Serve() }\n\n"
        "func (s *Server) Start() error { return listen(s.Addr) }\n\nfunc NewServer() *Server { return &Server{} }\n",
        {"Server", "Handler", "Serve", "Start", "NewServer"}, {"listen", "Server"},
    ),
    "point.rs": (
        "pub struct Point { x: f64 }\npub enum Kind { A }\npub trait Draw { fn draw(&self); }\n"
        "impl Draw for Point { fn draw(&self) { render(self); self.x.abs(); println!(\"p\"); } }\n"
        "fn distance(a: &Point) -> f64 { Vec::new(); 0.0 }\n",
        {"Point", "Kind", "Draw", "draw", "distance"}, {"render", "abs", "println", "Point", "new"},
    ),
    "Account.java": (
        "public class Account implements Ledger {\n  public Account() {}\n"
        "  void deposit(Money m) { m.check(); audit(); }\n}\n"
        "interface Ledger { void post(); }\n",
        {"Account", "deposit", "Ledger", "post"}, {"check", "audit", "Money", "Ledger"},
    ),
    "list.c": (
        "#define MAX_NODES 64\ntypedef struct node { int v; } node_t;\n"
        "int list_length(node_t *head) { return count_nodes(head); }\nstatic char *name_of(int i) { return 0; }\n",
        {"MAX_NODES", "node", "node_t", "list_length", "name_of"}, {"count_nodes", "node_t"},
    ),
    "geo.cpp": (
        "namespace geo {\nclass Shape : public Base {\n public:\n  double area() const;\n};\n}\n"
        "double geo::Shape::area() const { return helper(2) + obj.size(); }\n"
        "template <typename T> T clamp_value(T v) { return std::max(v, v); }\n",
        {"geo", "Shape", "area", "clamp_value"}, {"helper", "size", "max", "Base"},
    ),
    "list.h": ("struct list { int n; };\nint list_push(struct list *l, int v);\n", {"list", "list_push"}, set()),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_definitions_and_references_per_language(name: str):
    source, definitions, references = SAMPLES[name]
    tags = extract(source.encode(), language_for(name))
    assert {d.name for d in tags.definitions} == definitions
    assert references <= set(tags.references)
    lines = source.splitlines()
    for d in tags.definitions:  # each definition carries its own source line
        assert d.name in d.text and d.text == lines[d.line].rstrip()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


@pytest.fixture
def ctx(tmp_path: Path) -> ToolContext:
    (tmp_path / "repo").mkdir()
    return ToolContext(workspace=Workspace(tmp_path / "repo"))


async def call(ctx: ToolContext, tool: str, **args):
    maps = CodeMaps()  # a fresh in-memory cache per call unless a test shares one
    return await Registry([Symbols(maps), RepoMap(maps)]).call(tool, args, ctx)


async def test_symbols_in_every_language(ctx: ToolContext):
    write(ctx.workspace.root, {name: source for name, (source, _, _) in SAMPLES.items()})
    for name, (_, definitions, _) in SAMPLES.items():
        result = await call(ctx, "symbols", path=name)
        assert result.ok and result.output.splitlines()[0] == f"{name}:"
        assert result.data["count"] >= len(definitions)
    everywhere = await call(ctx, "symbols", name="shape")
    assert everywhere.output.splitlines() == [
        "geo.cpp:", "     2 class Shape : public Base {",
        "shapes.py:", "     5 class Shape(Base):", "     9 def make_shape(kind: Kind) -> Shape:",
        "square.ts:", "     1 export interface Shape { area(): number }",
    ]


async def test_symbols_refuses_unknown_language_and_escape(ctx: ToolContext):
    write(ctx.workspace.root, {"notes.txt": "hi\n"})
    unknown = await call(ctx, "symbols", path="notes.txt")
    assert not unknown.ok and ".txt" in unknown.output and ".py" in unknown.output
    outside = await call(ctx, "symbols", path="../x.py")
    assert not outside.ok and "outside the workspace" in outside.output
    focus_outside = await call(ctx, "repo_map", focus=["/etc/passwd"])
    assert not focus_outside.ok and "outside the workspace" in focus_outside.output


def hub_repo(root: Path) -> None:
    """core.py is referenced by four files; leaf.py alone uses widgets.py."""
    files = {
        "core.py": "def compute_total_price(items):\n    return sum(items)\n",
        "widgets.py": "def render_widget_tree(node):\n    return node\n",
        "leaf.py": "from widgets import render_widget_tree\n\ndef show_leaf():\n    return render_widget_tree(1)\n",
        "notes.md": "compute_total_price everywhere\n",
    }
    for n in range(4):
        files[f"user{n}.py"] = (f"from core import compute_total_price\n\ndef order_{n}(items):\n"
                                f"    return compute_total_price(items)\n")
    write(root, files)


def map_files(text: str) -> list[str]:
    return [line[:-1] for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]


async def test_map_ranks_the_most_referenced_file_first(ctx: ToolContext):
    hub_repo(ctx.workspace.root)
    result = await call(ctx, "repo_map")
    assert result.ok
    assert map_files(result.output)[0] == "core.py"
    assert "     1 def compute_total_price(items):" in result.output.splitlines()


async def test_map_leans_toward_the_files_in_play(ctx: ToolContext):
    hub_repo(ctx.workspace.root)
    focused = map_files((await call(ctx, "repo_map", focus=["leaf.py"])).output)
    assert focused[:2] == ["widgets.py", "leaf.py"]
    assert focused.index("widgets.py") < focused.index("core.py")
    named = map_files((await call(ctx, "repo_map", identifiers=["render_widget_tree"])).output)
    assert named[0] == "widgets.py"


async def test_map_fits_the_token_budget(ctx: ToolContext):
    files = {f"mod{n}.py": "".join(f"def function_number_{n}_{k}(argument_one, argument_two):\n    pass\n"
                                   for k in range(20)) for n in range(20)}
    write(ctx.workspace.root, files)
    sizes = []
    for budget in (64, 200, 1000, 4000):
        result = await call(ctx, "repo_map", max_tokens=budget)
        assert result.ok and estimate_tokens(result.output) <= budget
        sizes.append(len(result.output))
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]
    everything = await call(ctx, "repo_map", max_tokens=32_000)
    assert everything.output.count("def function_number_") == 400


async def test_map_honours_gitignore_and_skips_symlinks(ctx: ToolContext, tmp_path: Path):
    root = ctx.workspace.root
    hub_repo(root)
    write(root, {".gitignore": "vendor/\n", "vendor/big.py": "def compute_total_price():\n    pass\n"})
    write(tmp_path, {"outside.py": "def secret_outside_function():\n    pass\n"})
    (root / "linked.py").symlink_to(tmp_path / "outside.py")
    text = (await call(ctx, "repo_map", max_tokens=8000)).output
    assert "vendor/" not in text and "secret_outside_function" not in text and "linked.py" not in text


async def test_map_without_sources_says_so(ctx: ToolContext):
    write(ctx.workspace.root, {"README.md": "hi\n"})
    result = await call(ctx, "repo_map")
    assert result.ok and "no source files" in result.output


async def test_cache_follows_edits_and_survives_restart(ctx: ToolContext):
    root = ctx.workspace.root
    hub_repo(root)
    maps = CodeMaps()
    tools = Registry([RepoMap(maps)])
    first = await tools.call("repo_map", {}, ctx)
    index = maps.get(root).index
    generation = index.generation
    assert (await tools.call("repo_map", {}, ctx)).output == first.output and index.generation == generation

    (root / "widgets.py").write_text(
        "def render_widget_tree(node):\n    return node\n\ndef brand_new_helper():\n    pass\n")
    os.utime(root / "widgets.py", ns=(1, 1))  # a different mtime even on coarse clocks
    second = await tools.call("repo_map", {"max_tokens": 8000}, ctx)
    assert "brand_new_helper" in second.output and index.generation == generation + 1

    # A fresh process reads the tags from .clover/cache/ and parses nothing.
    cache = root / ".clover" / "cache"
    assert (cache / CACHE_FILE).is_file() and (cache / ".gitignore").read_text().endswith("*\n")
    fresh = CodeMap(root, cache)
    rels = sorted(p.name for p in root.iterdir() if p.is_file())
    assert fresh.render(rels, max_tokens=8000) == second.output + "\n"
    assert fresh.index.generation == 0

    (cache / CACHE_FILE).write_text("{not json")  # damaged: rebuilt, no error
    assert CodeMap(root, cache).render(rels, max_tokens=8000) == second.output + "\n"


async def test_cache_dir_stays_out_of_listings(ctx: ToolContext):
    hub_repo(ctx.workspace.root)
    await Registry(TOOLS).call("repo_map", {}, ctx)
    listed = (await Registry(TOOLS).call("list_files", {}, ctx)).output
    assert ".clover" not in listed


async def test_cache_never_written_through_a_symlink_out(ctx: ToolContext, tmp_path: Path):
    root = ctx.workspace.root
    hub_repo(root)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (root / ".clover").mkdir()
    (root / ".clover" / "cache").symlink_to(elsewhere)
    result = await call(ctx, "repo_map")
    assert result.ok and map_files(result.output)[0] == "core.py"
    assert list(elsewhere.iterdir()) == []
