"""The system prompt and tool descriptions, installed as the package `clover_code.prompts`
(pyproject's package-dir) so that they load through importlib.resources."""
