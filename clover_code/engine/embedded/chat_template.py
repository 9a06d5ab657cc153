"""A chat request -> prompt token ids, with the checkpoint's own chat template."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from clover_code.engine import ChatRequest, EngineError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase


class ChatTemplate:
    """Renders messages and tools the way the checkpoint was trained to read them."""

    def __init__(self, tokenizer: PreTrainedTokenizerBase):
        self.tokenizer = tokenizer

    def encode(self, request: ChatRequest) -> list[int]:
        """The prompt's ids, ending in the assistant turn's opening."""
        try:
            text = self.tokenizer.apply_chat_template(request.messages, tools=cast(Any, request.tools or None),
                                                      add_generation_prompt=True, tokenize=False)
        except Exception as e:  # jinja errors, missing template
            raise EngineError(f"cannot render the conversation with the checkpoint's chat template: {e}") from None
        return list(self.tokenizer.encode(str(text), add_special_tokens=False))
