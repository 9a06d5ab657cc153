"""Wire formats, both ends: the OpenAI-compatible client (remote.py, chunk_fold.py, window.py)
and `clover-code serve` (server.py, http_guard.py), with the shapes and SSE reader they share
(openai.py)."""
