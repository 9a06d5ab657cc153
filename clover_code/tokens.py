"""Token estimates for when no tokenizer is at hand; shared by tools, engines and the agent."""


def estimate_tokens(text: str) -> int:
    """About 3.5 bytes a token for code and English."""
    return max(1, (len(text.encode("utf-8")) * 2 + 6) // 7) if text else 0
