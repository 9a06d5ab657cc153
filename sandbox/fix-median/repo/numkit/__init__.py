from numkit.stats import clamp, mean, median, mode

__all__ = ["clamp", "mean", "median", "mode"]
