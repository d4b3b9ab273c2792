"""The PNG plots of ``grpo-trl report`` (report/page.py): which logged metrics go on which plot, and drawing them.

Every numeric metric is drawn somewhere: the fixed plots in ``PLOTS``, then one ``metric_<group>.png`` per remaining
group of keys; the evaluation metrics likewise: ``eval.png`` (rewards), ``eval_details.png`` (loss, reward std),
``eval_<plot>.png`` for each of ``PLOTS``, then one ``eval_metric_<group>.png`` per remaining group.
"""

from __future__ import annotations

import math
from pathlib import Path

MAX_PLOTTED = 1e300

# plot file -> (title, series chooser)
PLOTS = {
    "rewards.png": (
        "Mean reward (total and per reward)",
        lambda k: k == "reward" or (k.startswith("rewards/") and k.endswith("/mean")),
    ),
    "reward_std.png": ("Reward std", lambda k: k == "reward_std" or (k.startswith("rewards/") and k.endswith("/std"))),
    "lengths.png": (
        "Completion length (tokens)",
        lambda k: k.startswith("completions/") and k.endswith("_length"),  # all, and those that ended with EOS
    ),
    "truncated.png": (
        "Completions cut at max_completion_length (fraction)",
        lambda k: k == "completions/clipped_ratio",
    ),
    "kl.png": ("KL to the reference model", lambda k: k == "kl"),
    "entropy.png": ("Token entropy", lambda k: k == "entropy"),
    "clip_ratio.png": ("Trust-region clip ratios (importance sampling)", lambda k: k.startswith("clip_ratio/")),
    "zero_std.png": (
        "Fraction of groups with zero reward std (no learning signal)",
        lambda k: k == "frac_reward_zero_std",
    ),
    "dynamic_sampling.png": (
        "Dynamic sampling: share of groups with zero reward std generated, dropped, left in the optimized batch",
        lambda k: (
            k in ("dynamic_sampling/zero_std_generated", "dynamic_sampling/dropped", "dynamic_sampling/zero_std_kept")
        ),
    ),
    "dynamic_sampling_generations.png": (
        "Dynamic sampling: completions generated per generation batch",
        lambda k: k == "dynamic_sampling/generations",
    ),
    "dynamic_sampling_rounds.png": (
        "Dynamic sampling: extra generation rounds per generation batch (refill)",
        lambda k: k == "dynamic_sampling/resample_rounds",
    ),
    "reward_none.png": ("Share of rows each reward scored None", lambda k: k.startswith("reward_none_frac/")),
    "loss_grad.png": ("Loss and gradient norm", lambda k: k in ("loss", "grad_norm")),
    "learning_rate.png": ("Learning rate", lambda k: k == "learning_rate"),
    "reward_faults.png": (
        "Reward faults (rows scored None per batch, by reward)",
        lambda k: k.startswith("reward_faults/"),
    ),
    "timing.png": (
        "Seconds per step: total, generation, rewards",
        lambda k: k == "step_time" or k.startswith("timing/"),
    ),
}
EVAL_MAIN = PLOTS["rewards.png"][1]  # the eval panel shows the rewards; the rest go to eval_details.png
EVAL_DETAILS = ("loss", "reward_std")  # the rest of the eval metrics get the training panels
# bookkeeping, not curves
NOT_PLOTTED = {"step", "epoch", "num_tokens", "total_flos", "train_runtime", "train_loss", "runtime"}  # eval_runtime
NOT_PLOTTED_SUFFIXES = ("_per_second", "_runtime")


def _other_groups(keys: list[str], drawn: set[str]) -> dict[str, list[str]]:
    """Metrics no fixed plot draws (``log_metric`` from rewards, new TRL metrics), grouped by their first path part.

    >>> _other_groups(["my/acc", "my/len", "solo", "kl"], {"kl"})
    {'my': ['my/acc', 'my/len'], 'solo': ['solo']}
    """
    groups: dict[str, list[str]] = {}
    for key in keys:
        if key in drawn or key in NOT_PLOTTED or key.endswith(NOT_PLOTTED_SUFFIXES):
            continue
        groups.setdefault(key.split("/")[0], []).append(key)
    return groups


def _plottable(value: object) -> bool:
    """A number matplotlib can scale an axis to: finite and below 1e300 (a user's ``log_metric`` of 1.7e308 made
    matplotlib raise while laying out the ticks; TRL's own metrics are float32)."""
    return isinstance(value, (int, float)) and math.isfinite(value) and abs(value) <= MAX_PLOTTED


def _draw(plt, title: str, series: list[str], history: list[dict], path: Path) -> bool:
    from matplotlib.ticker import MaxNLocator

    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
    drew = False
    for key in series:
        points = [(h["step"], h[key]) for h in history if _plottable(h.get(key))]
        if points:
            xs, ys = zip(*points)
            ax.plot(xs, ys, label=key, linewidth=1.2, marker="o" if len(xs) < 12 else None, markersize=3)
            drew = True
    ax.set_title(title)
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.grid(alpha=0.3)
    if drew:
        ax.legend(fontsize=7, loc="best")
        fig.tight_layout()
        fig.savefig(path)
    plt.close(fig)
    return drew


HELDOUT_PLOT = "heldout.png"


def plot_heldout(
    history: list[dict], heldout: list[dict], out_dir: Path, alert_steps: list[int] = ()
) -> dict[str, list[str]]:
    """``heldout.png``: held-out pass@k (``heldout:``, one point per evaluation) on the left axis, the training
    reward on the right, over steps, so a reward that rises while held-out accuracy falls shows at a glance; a dashed
    line at each step in ``alert_steps`` (the ``heldout_diverging`` alert). Returns ``{file: [series]}`` like
    ``plot_history`` (nothing without a held-out point)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # a reward alias such as "$\\x$" is a name, not TeX
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    keys = sorted({k for h in heldout for k in h if "pass@" in k and _plottable(h[k])}, key=lambda k: (len(k), k))
    if not keys:
        return {}
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
    for key in keys:
        xs, ys = zip(*[(h["step"], h[key]) for h in heldout if _plottable(h.get(key))])
        ax.plot(xs, ys, label=key, linewidth=1.4, marker="o", markersize=3)
    ax.set_ylabel("held-out pass@k")
    ax.set_ylim(-0.02, 1.02)
    series = list(keys)
    reward = [(h["step"], h["reward"]) for h in history if _plottable(h.get("reward"))]
    if reward:
        right = ax.twinx()
        right.plot(*zip(*reward), label="reward (training)", color="grey", linewidth=1.0, alpha=0.8)
        right.set_ylabel("training reward")
        right.legend(fontsize=7, loc="lower right")
        series.append("reward")
    for step in alert_steps:
        ax.axvline(step, color="red", linestyle="--", linewidth=1.0, label=f"alert (step {step})")
    ax.set_title(plot_title(HELDOUT_PLOT))
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(out_dir / HELDOUT_PLOT)
    plt.close(fig)
    return {HELDOUT_PLOT: series}


def plot_title(filename: str) -> str:
    """The heading of a PNG written by ``plot_history``."""
    if filename == HELDOUT_PLOT:
        return "Held-out pass@k (heldout:) vs training reward"
    if filename in PLOTS:
        return PLOTS[filename][0]
    if filename == "eval.png":
        return "Evaluation on the eval split: mean reward (total and per reward)"
    if filename == "eval_details.png":
        return "Evaluation on the eval split: loss and reward std"
    if filename.startswith("eval_metric_"):
        return f"Evaluation on the eval split: {filename[len('eval_metric_') : -len('.png')]}"
    if filename.startswith("eval_") and filename[len("eval_") :] in PLOTS:
        return f"Evaluation on the eval split: {PLOTS[filename[len('eval_') :]][0]}"
    return f"Logged metric: {filename[len('metric_') : -len('.png')]}"


def _group_file(prefix: str, group: str) -> str:
    return prefix + "".join(c if c.isalnum() or c in "-_" else "_" for c in group)[:60] + ".png"


def plot_history(history: list[dict], out_dir: Path, eval_history: list[dict] | None = None) -> dict[str, list[str]]:
    """Write the PNGs; return ``{file: [series plotted]}`` (plots with no data are skipped). Every numeric metric
    is drawn somewhere: the fixed plots, then one ``metric_<group>.png`` per remaining group (``log_metric`` values
    from rewards...), then ``eval.png`` for the evaluation metrics."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # a reward alias such as "$\\x$" is a name, not TeX
    import matplotlib.pyplot as plt

    keys = sorted(
        {k for h in history for k, v in h.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    )
    drawn: dict[str, list[str]] = {}
    for filename, (title, choose) in PLOTS.items():
        series = [k for k in keys if choose(k)]
        if series and _draw(plt, title, series, history, out_dir / filename):
            drawn[filename] = series
    taken = {k for series in drawn.values() for k in series}
    for group, series in _other_groups(keys, taken).items():
        filename = _group_file("metric_", group)
        if _draw(plt, f"Logged metric: {group}", series, history, out_dir / filename):
            drawn[filename] = series
    if eval_history:
        eval_keys = sorted({k for h in eval_history for k, v in h.items() if isinstance(v, (int, float))})
        main = [k for k in eval_keys if EVAL_MAIN(k)]
        rest = [
            k
            for k in eval_keys
            if k not in main
            and k != "step"
            and not k.startswith("clip_ratio/")
            and not k.endswith(NOT_PLOTTED_SUFFIXES)
        ]  # trust-region clip ratios are 0 in evaluation (no policy update)
        details = [k for k in EVAL_DETAILS if k in rest]
        panels, taken = [("eval.png", main), ("eval_details.png", details)], set(details)
        for filename, (_, choose) in PLOTS.items():  # the training panels (KL on its own, lengths, faults...)
            series = [k for k in rest if k not in taken and choose(k)]
            panels.append(("eval_" + filename, series))
            taken.update(series)
        panels += [(_group_file("eval_metric_", g), ks) for g, ks in _other_groups(rest, taken).items()]
        for filename, series in panels:
            if series and _draw(plt, plot_title(filename), series, eval_history, out_dir / filename):
                drawn[filename] = ["eval_" + k for k in series]
    return drawn
