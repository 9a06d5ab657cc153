"""The in-process engine: a Clover checkpoint in this process (engine.py composes the parts):
loading, the block-diffusion loop and its denoisers, prefix and recurrent-state caches, the
detokenizer, stop strings, copy drafting, and the thread bridge to asyncio. Heavy: imports
torch and transformers, so only the embedded engine's users import from here."""
