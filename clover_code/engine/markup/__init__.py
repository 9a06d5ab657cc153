"""The model's markup: tool calls in the text it writes (toolcalls.py), how its chat template
lays out a call (call_format.py), the grammars of a reply and of JSON arguments
(call_grammar.py, json_grammar.py), the scaffold that decodes calls under them (scaffold.py),
what the scaffold knows of a tokenizer (vocabulary.py), and held-back partial tags."""
