"""A request's stop strings over streamed text: cut at the first, hold back a possible start."""

from __future__ import annotations

from clover_code.engine.markup.partial_tags import partial_tag_length


class StopStrings:
    """Holds back text that could be the start of a stop string; cuts at the first stop string."""

    def __init__(self, stops: tuple[str, ...]):
        self.stops = tuple(s for s in stops if s)
        self.held = ""
        self.hit: str | None = None  # the stop string that cut the text, once one has

    def feed(self, text: str) -> tuple[str, bool]:
        """(text safe to emit, whether a stop string was hit)."""
        text = self.held + text
        cuts = [(text.find(s), s) for s in self.stops if s in text]
        if cuts:
            at, self.hit = min(cuts, key=lambda cut: cut[0])
            self.held = ""
            return text[:at], True
        keep = partial_tag_length(text, self.stops)
        self.held = text[len(text) - keep:] if keep else ""
        return text[: len(text) - keep], False

    def flush(self) -> str:
        text, self.held = self.held, ""
        return text
