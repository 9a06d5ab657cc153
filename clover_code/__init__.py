"""clover-code: a terminal coding assistant on the Clover block-diffusion LM."""

__version__ = "0.1.0"
