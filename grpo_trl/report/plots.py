"""The PNG plots of ``grpo-trl report``: which logged metric goes on which plot (``PLOTS``, then one
``metric_<group>.png`` per remaining group; the eval metrics alike as ``eval_*.png``), drawn smoothed with the raw
values faint, runs told apart by line style; every PNG through the one writer.
"""

from __future__ import annotations

import math
import re
from io import BytesIO
from pathlib import Path

# plot file -> (title, the metrics it draws: a regular expression matched whole)
PLOTS = {
    "rewards.png": ("Mean reward (total and per reward)", r"reward|rewards/.*/mean"),
    "reward_std.png": ("Reward std", r"reward_std|rewards/.*/std"),
    "lengths.png": ("Completion length (tokens)", r"completions/.*_length"),
    "truncated.png": ("Completions cut at max_completion_length (fraction)", r"completions/clipped_ratio"),
    "kl.png": ("KL to the reference model", r"kl"),
    "entropy.png": ("Token entropy", r"entropy"),
    "clip_ratio.png": ("Trust-region clip ratios (importance sampling)", r"clip_ratio/.*"),
    "zero_std.png": ("Fraction of groups with zero reward std (no learning signal)", r"frac_reward_zero_std"),
    "dynamic_sampling.png": (
        "Dynamic sampling: share of groups with zero reward std generated, dropped, left in the optimized batch",
        r"dynamic_sampling/(zero_std_generated|dropped|zero_std_kept)",
    ),
    "dynamic_sampling_generations.png": (
        "Dynamic sampling: completions generated per generation batch",
        r"dynamic_sampling/generations",
    ),
    "dynamic_sampling_rounds.png": (
        "Dynamic sampling: extra generation rounds per generation batch (refill)",
        r"dynamic_sampling/resample_rounds",
    ),
    "reward_none.png": ("Share of rows each reward scored None", r"reward_none_frac/.*"),
    "loss_grad.png": ("Loss and gradient norm", r"loss|grad_norm"),
    "learning_rate.png": ("Learning rate", r"learning_rate"),
    "reward_faults.png": ("Reward faults (rows scored None per batch, by reward)", r"reward_faults/.*"),
    "timing.png": ("Seconds per step: total, generation, rewards", r"step_time|timing/.*"),
}
HELDOUT_PLOT = "heldout.png"
EVAL = "Evaluation on the eval split: "
TITLES = {file: title for file, (title, _) in PLOTS.items()} | {  # and the plots not in PLOTS
    HELDOUT_PLOT: "Held-out pass@k (heldout:) vs training reward",
    "eval.png": EVAL + "mean reward (total and per reward)",
    "eval_details.png": EVAL + "loss and reward std",
}
NOT_PLOTTED = {"step", "epoch", "num_tokens", "total_flos", "train_runtime", "train_loss", "runtime"}  # bookkeeping
NOT_PLOTTED_SUFFIXES = ("_per_second", "_runtime")
REWARD = "reward"  # the total: black and on top in every panel that has it
RUN_STYLES = ("-", "--", ":", "-.")  # one line style per run when runs are overlaid


def plot_title(filename: str) -> str:
    """The heading of a PNG this module writes (``eval_<plot>``: the training plot's, on the eval split)."""
    if filename in TITLES:
        return TITLES[filename]
    if filename.startswith("eval_"):
        return EVAL + plot_title(filename[5:]).removeprefix("Logged metric: ")
    return f"Logged metric: {filename.removesuffix('.png').removeprefix('metric_')}"


def smooth(values: list[float], window: int) -> list[float]:
    """Centred mean over ``window`` values (fewer at the ends): a curve not shifted right as a trailing mean is."""
    import pandas  # datasets' own dependency

    return pandas.Series(values).rolling(window, min_periods=1, center=True).mean().tolist()


def _points(history: list[dict], key: str) -> list[tuple[int, float]]:
    """Values matplotlib can scale an axis to: finite, below 1e300 (a user's ``log_metric`` of 1.7e308 broke it)."""
    ok = lambda v: isinstance(v, int | float) and math.isfinite(v) and abs(v) <= 1e300  # noqa: E731
    return [(h["step"], h[key]) for h in history if ok(h.get(key))]


def _line(ax, runs: list, key: str, colour: str) -> None:
    """``key`` of every run: from 12 points on, centred means over about a 15th of them, the raw values faint."""
    for r, (name, history) in enumerate(runs):
        if points := _points(history, key):
            xs, ys = zip(*points)
            style = {"color": "black" if key == REWARD else colour, "linestyle": RUN_STYLES[r % len(RUN_STYLES)]}
            style.update(zorder=5 if key == REWARD else 2, marker="o" if len(xs) < 12 else None, markersize=3)
            if len(ys) >= 12:
                ax.plot(xs, ys, linewidth=0.8, alpha=0.22, **style)
                ys = smooth(list(ys), max(2, len(ys) // 15))
            width = 2.0 if key == REWARD else 1.3  # the total stands out
            ax.plot(xs, ys, label=f"{name}: {key}" if len(runs) > 1 else key, linewidth=width, **style)


def _figure(title: str, path: Path, draw) -> None:
    """A figure drawn by ``draw(ax)``, saved as PNG bytes through the one writer (``savefig(path)`` follows links)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # a reward alias such as "$\\x$" is a name, not TeX
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from grpo_trl.io import write

    fig, ax = plt.subplots(figsize=(7, 3.6))
    draw(ax)
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("step")
    ax.grid(alpha=0.3)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    fig.tight_layout()
    buf = BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write(path, buf.getvalue(), mine=True)  # report/ is grpo-trl's; never through a link


def _draw(series: list[str], runs: list, path: Path, zero: set[str]) -> list[str]:
    """Draw ``series`` of every run into ``path``; its name goes into ``zero`` when every value drawn is 0."""
    drawn = [k for k in series if any(_points(h, k) for _, h in runs)]

    def draw(ax):
        for i, key in enumerate(sorted(drawn, key=lambda k: k == REWARD)):  # the total last: on top
            _line(ax, runs, key, f"C{i}")
        ax.ticklabel_format(axis="y", useOffset=False)  # a constant 0.3 as 0.3, not 1e-13 + 3e-1
        ax.legend(fontsize=7, loc="best")

    if drawn:
        _figure(plot_title(path.name), path, draw)
        if all(v == 0 for k in drawn for _, h in runs for _, v in _points(h, k)):
            zero.add(path.name)
    return drawn


def plot_heldout(runs: list[tuple[str, list[dict], list[dict]]], out: Path, alert_steps: list[int]) -> dict:
    """``heldout.png``: held-out pass@k of every ``(name, history, heldout)`` run on the left axis, the training
    reward on the right, a dashed line at each divergence alert; ``{}`` without a held-out point."""
    keys = {k for *_, hs in runs for h in hs for k in h if "pass@" in k and _points([h], k)}
    if not (keys := sorted(keys, key=lambda k: (len(k), k))):
        return {}
    reward = any(_points(h, REWARD) for _, h, _ in runs)

    def draw(ax):
        for i, key in enumerate(keys):
            _line(ax, [(n, hs) for n, _, hs in runs], key, f"C{i}")
        if reward:
            right = ax.twinx()
            _line(right, [(n, h) for n, h, _ in runs], REWARD, "black")
            right.set_ylabel("training reward")
            right.legend(fontsize=7, loc="lower right")
        ax.set_ylabel("held-out pass@k")
        ax.set_ylim(-0.02, 1.02)
        for step in alert_steps:
            ax.axvline(step, color="red", linestyle="--", linewidth=1.0, label=f"alert (step {step})")
        ax.legend(fontsize=7, loc="lower left")

    _figure(plot_title(HELDOUT_PLOT), out / HELDOUT_PLOT, draw)
    return {HELDOUT_PLOT: [*keys, REWARD] if reward else keys}


def _panels(keys: list[str], prefix: str = "") -> list[tuple[str, list[str]]]:
    """``(file, series)``: the fixed plots, then one per remaining group of keys (by their first path part)."""
    panels, taken, groups = [], set(), {}
    for filename, (_, pattern) in PLOTS.items():
        series = [k for k in keys if k not in taken and re.fullmatch(pattern, k)]
        panels.append((prefix + filename, series))
        taken.update(series)
    for key in keys:
        if key not in taken and key not in NOT_PLOTTED and not key.endswith(NOT_PLOTTED_SUFFIXES):
            groups.setdefault(key.split("/")[0], []).append(key)
    clean = lambda g: "".join(c if c.isalnum() or c in "-_" else "_" for c in g)[:60]  # noqa: E731
    return panels + [(f"{prefix}metric_{clean(g)}.png", series) for g, series in groups.items()]


def plot_history(runs: list[tuple[str, list[dict], list[dict]]], out: Path, zero: set[str]) -> dict:
    """Every numeric metric of ``(name, history, eval_history)`` runs drawn somewhere; ``{file: [series]}``. The
    eval metrics: rewards in ``eval.png``, loss and reward std in ``eval_details.png``, the rest as in training
    (trust-region clip ratios are 0 in evaluation: no policy update)."""
    train, evals = [(n, h) for n, h, _ in runs], [(n, e) for n, _, e in runs]
    number = lambda v: isinstance(v, int | float) and not isinstance(v, bool)  # noqa: E731
    keys = lambda rs: sorted({k for _, h in rs for e in h for k, v in e.items() if number(v)} - {"step"})  # noqa: E731
    rest = [k for k in keys(evals) if not k.startswith("clip_ratio/") and not k.endswith(NOT_PLOTTED_SUFFIXES)]
    main = [k for k in rest if re.fullmatch(PLOTS["rewards.png"][1], k)]
    details = [k for k in ("loss", "reward_std") if k in rest]
    eval_panels = [("eval.png", main), ("eval_details.png", details)]
    eval_panels += _panels([k for k in rest if k not in main and k not in details], "eval_")
    drawn = {}
    for panels, rs, prefix in ((_panels(keys(train)), train, ""), (eval_panels, evals, "eval_")):
        for filename, series in panels:
            if series and (s := _draw(series, rs, out / filename, zero)):
                drawn[filename] = [prefix + k for k in s]
    return drawn
