"""The demo model's chat template and tokenizer, and sessions turned into training rows.

The template uses Qwen's markup (`<|im_start|>`, `<tool_call>`, `<tool_response>`) but
renders the system turn compactly: the first line of the agent's system prompt and one
line of tool signatures, instead of the whole prompt and the JSON schemas. A model of a
few million parameters cannot use the long form, and it would triple every sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|mask|>"]
MARKUP_TOKENS = ["<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
FILLER = "<|endoftext|>"  # pads an assistant turn's last block; the engine cuts at <|im_end|> before it

CHAT_TEMPLATE = (
    "{%- if messages and messages[0].role == 'system' %}{% set head = messages[0].content.split('\n')[0] %}"
    "{%- else %}{% set head = 'You are Clover Code, a coding assistant.' %}{% endif -%}\n"
    "<|im_start|>system\n{{ head }}"
    "{% if tools %}{{ '\\n' }}Tools:{% for t in tools %} {{ t.function.name }}"
    "({{ t.function.parameters.properties | join(', ') }}){% endfor %}{% endif %}<|im_end|>\n"
    "{% for m in messages %}"
    "{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{% elif m.role == 'assistant' %}<|im_start|>assistant\n{% if m.content %}{{ m.content }}{% endif %}"
    "{% for tc in m.tool_calls or [] %}<tool_call>{\"name\": \"{{ tc.function.name }}\", \"arguments\": "
    "{% if tc.function.arguments is string %}{{ tc.function.arguments }}{% else %}{{ tc.function.arguments | tojson }}"
    "{% endif %}}</tool_call>{% endfor %}<|im_end|>\n"
    "{% elif m.role == 'tool' %}"
    "{% if loop.first or loop.previtem.role != 'tool' %}<|im_start|>user\n{% endif %}"
    "<tool_response>{{ m.content }}</tool_response>"
    "{% if loop.last or loop.nextitem.role != 'tool' %}<|im_end|>\n{% else %}{{ '\\n' }}{% endif %}"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


# How text is cut before BPE merges. "gpt2": a word carries its leading space, so `netkit` in
# "the netkit package" and in "netkit/stats.py" are two unrelated tokens and copying a name
# from prose into a path must be learned name by name. "words": whitespace runs, letter runs,
# digit runs and punctuation runs are separate pieces, so a name is the same tokens wherever
# it appears (longer sequences: each space between words is a token of its own).
SPLITS = {"gpt2": None, "words": r"\s+|\p{L}+|\p{N}+|[^\s\p{L}\p{N}]+"}


def train_tokenizer(texts, vocab_size: int, split: str = "words"):
    """A byte-level BPE over the rendered sessions, with the chat markup as whole tokens."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    if SPLITS[split] is None:
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    else:
        tok.pre_tokenizer = pre_tokenizers.Sequence([
            pre_tokenizers.Split(Regex(SPLITS[split]), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=SPECIAL_TOKENS + MARKUP_TOKENS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    tok.add_special_tokens(SPECIAL_TOKENS)
    tok.add_tokens(MARKUP_TOKENS)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token=FILLER,
                                   mask_token="<|mask|>", chat_template=CHAT_TEMPLATE)


def render(tokenizer, messages, tools, generation_prompt: bool = False) -> str:
    return tokenizer.apply_chat_template(messages, tools=tools, tokenize=False,
                                         add_generation_prompt=generation_prompt)


@dataclass
class Row:
    """One session as token ids, with the spans the model writes (assistant turns)."""

    ids: list[int]
    turns: list[tuple[int, int]]  # [start, end) of each target assistant turn, <|im_end|> included
    family: str

    def prefix(self, turns: int) -> Row:
        """The session up to the end of its `turns`-th target turn: what the model saw and
        wrote by then. Early turns are where names are copied from the task; training on
        them alone costs a fraction of the whole session."""
        return Row(self.ids[: self.turns[turns - 1][1]], self.turns[:turns], self.family)


def is_target(message: dict) -> bool:
    """An assistant turn the model is trained and scored on (a slip is only context)."""
    return message["role"] == "assistant" and not message.get("slip")


def session_row(tokenizer, session: dict, tools) -> Row:
    """Tokenized piecewise at turn boundaries, so that each turn's prompt tokenizes exactly
    as the engine will tokenize it at inference (checked)."""
    messages = session["messages"]
    full = render(tokenizer, messages, tools)
    end_tag = "<|im_end|>"
    cuts: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        if not is_target(m):
            continue
        prompt = render(tokenizer, messages[:i], tools, generation_prompt=True)
        assert full.startswith(prompt), "the template must render a conversation as a prefix of its extension"
        start = len(prompt)
        cuts.append((start, full.index(end_tag, start) + len(end_tag)))
    ids: list[int] = []
    turns: list[tuple[int, int]] = []
    pos = 0
    for start, end in cuts:
        ids += tokenizer.encode(full[pos:start], add_special_tokens=False)
        turn = tokenizer.encode(full[start:end], add_special_tokens=False)
        turns.append((len(ids), len(ids) + len(turn)))
        ids += turn
        pos = end
    ids += tokenizer.encode(full[pos:], add_special_tokens=False)
    return Row(ids, turns, session["family"])


def check_row(tokenizer, session: dict, tools, row: Row) -> None:
    """The prompt of every turn tokenizes to the row's ids before that turn."""
    messages = session["messages"]
    turn = 0
    for i, m in enumerate(messages):
        if is_target(m):
            prompt = tokenizer.encode(render(tokenizer, messages[:i], tools, True), add_special_tokens=False)
            start = row.turns[turn][0]
            assert prompt == row.ids[:start], f"turn {turn}: piecewise tokens differ from the engine's"
            turn += 1
