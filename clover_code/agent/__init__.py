"""The agent: loop, permissions, context, instructions. Never imports textual or torch."""
