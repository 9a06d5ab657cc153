"""Where commands run: bubblewrap's argv and environment (bwrap.py), what it allows
(policy.py), its process and memory limits (limits.py), and the one git runner, which runs
git inside it too (gitrun.py). docs/security.md says why each part is there."""
