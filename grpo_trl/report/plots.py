"""The PNG plots of ``grpo-trl report`` (report/page.py): which logged metrics go on which plot, and drawing them.

Every numeric metric is drawn somewhere: the fixed plots in ``PLOTS``, then one ``metric_<group>.png`` per remaining
group of keys; the evaluation metrics likewise: ``eval.png`` (rewards), ``eval_details.png`` (loss, reward std),
``eval_<plot>.png`` for each of ``PLOTS``, then one ``eval_metric_<group>.png`` per remaining group.
"""

from __future__ import annotations

import itertools
import math
from io import BytesIO
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


def _save(fig, path: Path) -> None:
    """The figure as a PNG through the one writer (matplotlib's own ``savefig(path)`` follows a symlink there)."""
    import matplotlib.pyplot as plt

    from grpo_trl.io import write

    buf = BytesIO()
    fig.savefig(buf, format="png")
    plt.close(fig)
    write(path, buf.getvalue(), mine=True)  # report/ is grpo-trl's; never through a link


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


def _number(value: object) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _plottable(value: object) -> bool:
    """A number matplotlib can scale an axis to: finite and below 1e300 (a user's ``log_metric`` of 1.7e308 made
    matplotlib raise while laying out the ticks; TRL's own metrics are float32)."""
    return isinstance(value, (int, float)) and math.isfinite(value) and abs(value) <= MAX_PLOTTED


REWARD = "reward"  # the total: black and on top in every panel that has it
RUN_STYLES = ("-", "--", ":", "-.")  # one line style per run when runs are overlaid
Runs = list[tuple[str, list[dict]]]  # (name, log history); the first is the run the report belongs to


def smooth(values: list[float], window: int) -> list[float]:
    """Centred mean over ``window`` values (fewer at the ends), so a curve is not shifted right as a trailing mean is.

    >>> smooth([0.0, 2.0, 4.0, 6.0, 8.0], 3)
    [1.0, 2.0, 4.0, 6.0, 7.0]
    """
    if window <= 1:  # nothing to average: the values as logged (a running sum would round them)
        return list(values)
    sums, half = [0.0, *itertools.accumulate(values)], window // 2
    spans = ((max(0, i - half), min(len(values), i + window - half)) for i in range(len(values)))
    return [(sums[b] - sums[a]) / (b - a) for a, b in spans]


def smoothing_window(points: int) -> int:
    """How many logged values each smoothed point averages: none under 12 points, then about a 15th of them."""
    return 1 if points < 12 else max(2, points // 15)


def _points(history: list[dict], key: str) -> list[tuple[int, float]]:
    return [(h["step"], h[key]) for h in history if _plottable(h.get(key))]


def _line(ax, runs: Runs, key: str, colour: str) -> None:
    """``key`` of every run: smoothed, the raw values faint; runs told apart by line style."""
    total = key == REWARD
    for r, (name, history) in enumerate(runs):
        points = _points(history, key)
        if not points:
            continue
        xs, ys = zip(*points)
        style = {"color": "black" if total else colour, "linestyle": RUN_STYLES[r % len(RUN_STYLES)]}
        style["zorder"] = 5 if total else 2
        window = smoothing_window(len(ys))
        if window > 1:
            ax.plot(xs, ys, linewidth=0.8, alpha=0.22, **style)
            ys = smooth(list(ys), window)
        label = f"{name}: {key}" if len(runs) > 1 else key
        marker = "o" if len(xs) < 12 else None
        ax.plot(xs, ys, label=label, linewidth=2.0 if total else 1.3, marker=marker, markersize=3, **style)


def _draw(plt, title: str, series: list[str], runs: Runs, path: Path, zero: set[str] | None = None) -> bool:
    """Draw ``series`` of every run into ``path``; ``path.name`` goes into ``zero`` when every value drawn is 0."""
    from matplotlib.ticker import MaxNLocator

    drawn = [k for k in series if any(_points(h, k) for _, h in runs)]
    if not drawn:
        return False
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
    for i, key in enumerate(sorted(drawn, key=lambda k: k == REWARD)):  # the total last: on top
        _line(ax, runs, key, f"C{i}")
    ax.set_title(title, fontsize=10)
    ax.ticklabel_format(axis="y", useOffset=False)  # a constant 0.3 as 0.3, not 1e-13 + 3e-1
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # steps are whole numbers
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="best")
    fig.tight_layout()
    _save(fig, path)
    if zero is not None and all(v == 0 for k in drawn for _, h in runs for _, v in _points(h, k)):
        zero.add(path.name)
    return True


HELDOUT_PLOT = "heldout.png"


def plot_heldout(
    history: list[dict],
    heldout: list[dict],
    out_dir: Path,
    alert_steps: list[int] = (),
    *,
    name: str = "",
    others: list[tuple[str, list[dict], list[dict]]] = (),
) -> dict[str, list[str]]:
    """``heldout.png``: held-out pass@k (``heldout:``, one point per evaluation) on the left axis, the training
    reward on the right, over steps, so a reward that rises while held-out accuracy falls shows at a glance; a dashed
    line at each step in ``alert_steps`` (the ``heldout_diverging`` alert). ``others``: ``(name, history, heldout)``
    of runs drawn over it. Returns ``{file: [series]}`` like ``plot_history`` (nothing without a held-out point)."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # a reward alias such as "$\\x$" is a name, not TeX
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    runs = [(name, history, heldout), *others]
    keys = {k for *_, hs in runs for h in hs for k in h if "pass@" in k and _plottable(h[k])}
    keys = sorted(keys, key=lambda k: (len(k), k))
    if not keys:
        return {}
    fig, ax = plt.subplots(figsize=(7, 3.6), dpi=100)
    right = ax.twinx() if any(_points(h, REWARD) for _, h, _ in runs) else None
    for i, key in enumerate(keys):
        _line(ax, [(n, hs) for n, _, hs in runs], key, f"C{i}")
    series = [*keys, REWARD] if right is not None else list(keys)
    if right is not None:
        _line(right, [(n, h) for n, h, _ in runs], REWARD, "black")
        right.set_ylabel("training reward")
        right.legend(fontsize=7, loc="lower right")
    ax.set_ylabel("held-out pass@k")
    ax.set_ylim(-0.02, 1.02)
    for step in alert_steps:
        ax.axvline(step, color="red", linestyle="--", linewidth=1.0, label=f"alert (step {step})")
    ax.set_title(plot_title(HELDOUT_PLOT))
    ax.set_xlabel("step")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    _save(fig, out_dir / HELDOUT_PLOT)
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


def plot_history(
    history: list[dict],
    out_dir: Path,
    eval_history: list[dict] | None = None,
    *,
    name: str = "",
    others: list[tuple[str, list[dict], list[dict]]] = (),
    zero: set[str] | None = None,
) -> dict[str, list[str]]:
    """Write the PNGs; return ``{file: [series plotted]}`` (plots with no data are skipped). Every numeric metric
    is drawn somewhere: the fixed plots, then one ``metric_<group>.png`` per remaining group (``log_metric`` values
    from rewards...), then ``eval.png`` for the evaluation metrics. ``others``: ``(name, history, eval_history)`` of
    runs drawn over this one (``name``); ``zero`` collects the plots whose every value is 0."""
    import matplotlib

    matplotlib.use("Agg")
    matplotlib.rcParams["text.parse_math"] = False  # a reward alias such as "$\\x$" is a name, not TeX
    import matplotlib.pyplot as plt

    runs = [(name, history), *((n, h) for n, h, _ in others)]
    eval_runs = [(name, eval_history or []), *((n, e) for n, _, e in others)]
    keys = sorted({k for _, h in runs for e in h for k, v in e.items() if _number(v)})
    drawn: dict[str, list[str]] = {}
    for filename, (title, choose) in PLOTS.items():
        series = [k for k in keys if choose(k)]
        if series and _draw(plt, title, series, runs, out_dir / filename, zero):
            drawn[filename] = series
    taken = {k for series in drawn.values() for k in series}
    for group, series in _other_groups(keys, taken).items():
        filename = _group_file("metric_", group)
        if _draw(plt, f"Logged metric: {group}", series, runs, out_dir / filename, zero):
            drawn[filename] = series
    if any(e for _, e in eval_runs):
        eval_keys = sorted({k for _, h in eval_runs for e in h for k, v in e.items() if isinstance(v, (int, float))})
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
            if series and _draw(plt, plot_title(filename), series, eval_runs, out_dir / filename, zero):
                drawn[filename] = ["eval_" + k for k in series]
    return drawn
