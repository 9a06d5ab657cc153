"""What makes checkpoints: tiny ones for tests (`python -m tools.training.make_tiny_model`) and the
demo model's trainer (`python -m tools.training.train_demo_model`)."""
