"""MarkdownBlock: Markdown drawn as cached lines, cheap to keep and cheap to grow.

Textual's `Markdown` widget mounts one widget per Markdown element; thousands of them
make a long history slow to lay out, and re-parsing a growing reply per block gets slow.
This widget renders with Rich's Markdown into lines it keeps and serves through the Line
API. While a reply streams (`live`), finished top-level parts are rendered once and
settled; only the short live tail is re-rendered per block. Its height grows in steps
of lines so that most blocks repaint one region instead of re-laying out the
screen, the text bottom-aligned inside so the newest line stays in place. Lines changed
by the last update are tinted for a moment (the newest block).
"""

from __future__ import annotations

from rich.markdown import Markdown
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Size
from textual.strip import Strip
from textual.timer import Timer
from textual.widget import Widget

from clover_code.ui.terminal_text import visible
from clover_code.ui.tui.display_text import safe_cut

FRESH_SECONDS = 0.35
_FRESH = Style(bgcolor="#203a2e")
# Re-rendering ~300 characters of Markdown costs ~3 ms here, 1,200 characters ~18 ms.
LIVE_CHARS = 300
# A live block reserves lines in steps: short replies in steps of 8, replies taller than the
# screen in steps of 64. The reserve sits above the text (the newest line stays at the
# bottom, the text scrolls up inside the block), where a tall reply keeps it off screen.
HEIGHT_STEP, TALL_STEP = 8, 64


class MarkdownBlock(Widget):
    DEFAULT_CSS = """
    MarkdownBlock { height: auto; width: 1fr; }
    """

    def __init__(self, text: str = "", *, live: bool = False, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self.live = live  # still growing: settle finished parts, highlight new lines
        self._segments: list[str] = []  # settled parts, each rendered once per width
        self._settled: list[Strip] = []
        self._tail = text  # the part re-rendered on every update
        self._lines: list[Strip] = []
        self._width = -1  # width the cached lines were rendered at
        self._height = 0  # height last reported to layout
        self._fresh_from: int | None = None
        self._fresh_timer: Timer | None = None
        self._styled: dict[int, Strip] = {}  # finished strips by line, until something changes
        self._stale = True  # text changed since the lines were rendered
        self._rendered_segments = 0  # settled parts already in self._settled

    @property
    def text(self) -> str:
        return "".join(self._segments) + self._tail

    def set_text(self, text: str) -> None:
        """Show `text`; while live it normally extends the old text (a new block).

        Only stores the text: rendering waits for the next frame, so a burst of blocks
        costs one render."""
        old = self.text
        if text == old:
            return
        settled = len(old) - len(self._tail)
        if not text.startswith(old[:settled]):
            self._segments, self._settled, settled = [], [], 0
            self._styled.clear()
            self._rendered_segments = 0
        self._tail = text[settled:]
        if self.live:
            self._settle()
        self._stale = True
        self.refresh(layout=self._width <= 0)

    def freeze(self) -> None:
        """No more text comes: drop the reserved lines and the highlight."""
        self.live = False
        self._clear_fresh()
        self.refresh(layout=True)

    def _update(self, width: int, measuring: bool = False) -> None:
        """Bring the cached lines up to date before they are measured or drawn."""
        if width != self._width:
            self._render_all(width)
        elif self._stale:
            unchanged = len(self._settled)  # lines before the tail stay as they are
            for part in self._segments[self._rendered_segments:]:
                self._settled += self._render_text(part, width) + [Strip.blank(0)]
            self._rendered_segments = len(self._segments)
            old_lines = self._lines
            self._render_tail()
            self._forget_from(unchanged)
            if self.live:
                self._mark_fresh(old_lines, unchanged)
        self._stale = False
        if not measuring and self._wanted_height() != self._height:
            self.refresh(layout=True)  # taller than reserved: the next frame lays out

    # --- rendering -------------------------------------------------------------------------
    def _settle(self) -> None:
        """Move finished top-level parts out of the tail (rendered at the next frame)."""
        while len(self._tail) > LIVE_CHARS and (cut := safe_cut(self._tail, 1)) is not None:
            self._segments.append(self._tail[:cut])
            self._tail = self._tail[cut:]

    def _render_text(self, text: str, width: int) -> list[Strip]:
        console = self.app.console
        options = console.options.update(width=width, height=None, highlight=False)
        # Model text may hold escape sequences: shown as text, never sent to the terminal.
        markdown = Markdown(visible(text.strip("\n")))
        rendered = console.render_lines(markdown, options, pad=False, new_lines=False)
        return [Strip(Segment.simplify(line)) for line in rendered]

    def _render_tail(self) -> None:
        self._lines = self._settled + (self._render_text(self._tail, self._width) if self._tail.strip() else [])

    def _render_all(self, width: int) -> None:
        self._styled.clear()
        self._width = width
        self._settled = []
        for part in self._segments:
            self._settled += self._render_text(part, width) + [Strip.blank(0)]
        self._rendered_segments = len(self._segments)
        self._render_tail()

    def _wanted_height(self) -> int:
        n = len(self._lines)
        if not self.live:
            return n
        step = TALL_STEP if n >= self.app.size.height else HEIGHT_STEP
        return -(-n // step) * step

    def get_content_height(self, container: Size, viewport: Size, width: int) -> int:
        self._update(width, measuring=True)
        self._height = self._wanted_height()
        return self._height

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        if self._stale or width != self._width:
            self._update(width)
        line = y - (self.size.height - len(self._lines)) if self.live else y  # bottom-aligned
        if not 0 <= line < len(self._lines):
            return Strip.blank(width, self.rich_style)
        strip = self._styled.get(line)
        if strip is None:
            strip = self._styled[line] = self._style_line(line, width)
        return strip

    def _style_line(self, y: int, width: int) -> Strip:
        base = self.rich_style
        strip = self._lines[y]
        if self._fresh_from is not None and y >= self._fresh_from:
            strip = strip.apply_style(_FRESH)  # as a base: code blocks keep their own colours
        return strip.apply_style(base).crop_extend(0, width, base)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._styled.clear()

    # --- the newest block's highlight ------------------------------------------------------
    def _mark_fresh(self, old_lines: list[Strip], same: int) -> None:
        """Tint from the first line that changed; lines before `same` are known unchanged."""
        for old, new in zip(old_lines[same:], self._lines[same:], strict=False):  # the text may have grown
            if old.text != new.text:
                break
            same += 1
        self._forget_from(min(same, self._fresh_from if self._fresh_from is not None else same))
        self._fresh_from = same
        if self._fresh_timer is not None:
            self._fresh_timer.stop()
        self._fresh_timer = self.set_timer(FRESH_SECONDS, self._clear_fresh)

    def _clear_fresh(self) -> None:
        if self._fresh_from is not None:
            self._forget_from(self._fresh_from)
            self._fresh_from = None
            self.refresh()

    def _forget_from(self, line: int) -> None:
        for y in [y for y in self._styled if y >= line]:
            del self._styled[y]
