"""Tool schemas and call layouts the reply grammar is tested with (test_call_grammar, test_scaffold):
the demo model's JSON layout and Qwen3-Coder's XML one, written as the model writes them."""

from __future__ import annotations

import json

from clover_code.engine.markup.call_format import CallFormat

READ = {"type": "function", "function": {"name": "read_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "offset": {"type": "integer"}, "limit": {"type": "integer"}}, "required": ["path"]}}}
EDIT = {"type": "function", "function": {"name": "edit_file", "parameters": {"type": "object", "properties": {
    "path": {"type": "string"}, "old_string": {"type": "string"}, "replace_all": {"type": "boolean"}},
    "required": ["path", "old_string"]}}}
SHELL = {"type": "function", "function": {"name": "run_shell", "parameters": {"type": "object", "properties": {
    "command": {"type": "string", "minLength": 1}, "timeout": {"anyOf": [{"type": "number"}, {"type": "null"}]},
    "mode": {"enum": ["fast", "slow"]}, "env": {"type": "array", "items": {"type": "string"}}},
    "required": ["command"]}}}
STATUS = {"type": "function", "function": {"name": "git_status", "parameters": {"type": "object", "properties": {}}}}
TOOLS = [READ, EDIT, SHELL, STATUS]
DEMO = CallFormat("json", '{"name": "', '", "arguments": ', "}")
XML = CallFormat("xml", "\n<function=", "", ">\n</function>\n", param_open=">\n<parameter=", param_mid=">\n",
                 param_close="\n</parameter")


def call(name: str, args: dict, fmt: CallFormat = DEMO) -> str:
    if fmt.family == "json":
        arguments = json.dumps(args, ensure_ascii=False)
        return f"<tool_call>{fmt.head}{name}{fmt.before_args}{arguments}{fmt.tail}</tool_call>"
    params = "".join(f"{fmt.param_open}{k}{fmt.param_mid}{v}{fmt.param_close}" for k, v in args.items())
    return f"<tool_call>{fmt.head}{name}{fmt.before_args}{params}{fmt.tail}</tool_call>"


XML_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content or '' }}"
    "{% for tc in m.tool_calls or [] %}<tool_call>\n<function={{ tc.function.name }}>\n"
    "{% for k, v in tc.function.arguments.items() %}<parameter={{ k }}>\n{{ v }}\n</parameter>\n{% endfor %}"
    "</function>\n</tool_call>{% endfor %}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
