"""`python tests/interop/llama_server.py ARGS`: llama-cpp-python's OpenAI-compatible server
(`python -m llama_cpp.server ARGS`) with ggml's extra weight buffers turned off.

Why: on our machines (CPUs with AMX, in a container) llama.cpp repacks the weights for
AMX and then segfaults on any batch of more than one token. Plain CPU buffers are
slower but correct; a 135M model does not notice.
"""

import runpy

from llama_cpp import llama_cpp

_default_params = llama_cpp.llama_model_default_params


def _model_params():
    params = _default_params()
    params.use_extra_bufts = False
    return params


llama_cpp.llama_model_default_params = _model_params
runpy.run_module("llama_cpp.server", run_name="__main__", alter_sys=True)
