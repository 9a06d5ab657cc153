"""Where commands run: bubblewrap's argv and environment (bwrap.py), what it allows
(policy.py), the seccomp filter that keeps unix sockets out of reach (seccomp.py), its process
and memory limits (limits.py), where clover-code keeps its own files, which it hides
(own_dirs.py), and the one git runner, which runs git inside it too (gitrun.py).
docs/security.md says why each part is there."""
