"""The PNG: pass rate against wall time per task, one point per engine and try, and each
task's wall time per engine (filled: passed). matplotlib is optional (`pip install
'clover-code[eval]'`); without it the report says so and everything else is written."""

from __future__ import annotations

from pathlib import Path

from clover_code.eval.stats import Summary

MISSING = "matplotlib is not installed: pip install 'clover-code[eval]' (or matplotlib) for the plot"


def plot(summary: Summary, path: Path) -> str | None:
    """Write the plot to `path`; None when written, else why not (one line for the user)."""
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only: no display needed
        import matplotlib.pyplot as plt
    except ImportError:
        return MISSING
    engines = [s for s in summary.engines if s.tasks]
    if not engines:
        return "no task ran"
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), dpi=110)
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, s in enumerate(engines):
        color = colors[i % len(colors)]
        rates = [100 * (s.pass_rate(k) or 0) for k in range(1, summary.tries + 1)]
        wall = s.wall_per_task or 0.0
        left.plot([wall] * len(rates), rates, "-", color=color, alpha=0.4)
        for k, rate in enumerate(rates, 1):
            left.scatter([wall], [rate], color=color, marker="o" if k == 1 else "^", s=60, zorder=3,
                         label=f"{s.name} try {k}" if summary.tries > 1 else s.name)
        tasks = list(summary.outcomes)
        for j, task in enumerate(tasks):
            o = summary.outcomes[task].get(s.name)
            if o is None:
                continue
            y = j + (i - (len(engines) - 1) / 2) * 0.12
            right.scatter([o.seconds], [y], s=40, zorder=3, edgecolors=color,
                          facecolors=color if o.passed_at is not None else "none")
    left.set_xlabel("wall time per task (s, mean)")
    left.set_ylabel("tasks passed (%)")
    left.set_ylim(-5, 105)
    left.set_xlim(left=0)
    left.set_title("pass rate against wall time")
    left.grid(alpha=0.3)
    left.legend(fontsize=8, loc="best")
    from matplotlib.lines import Line2D

    handles = [Line2D([], [], marker="o", linestyle="", color=colors[i % len(colors)], label=s.name)
               for i, s in enumerate(engines)]
    right.set_yticks(range(len(summary.outcomes)))
    right.set_yticklabels(list(summary.outcomes), fontsize=8)
    right.set_xlabel("wall time (s), filled = passed")
    right.set_xlim(left=0)
    right.set_title("per task")
    right.grid(alpha=0.3, axis="x")
    right.set_ylim(len(summary.outcomes) - 0.5, -0.5)  # the first task on top
    right.legend(handles=handles, fontsize=8, loc="best")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path)
    plt.close(fig)
    return None
