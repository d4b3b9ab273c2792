"""``grpo-trl report OUTPUT_DIR [OTHER_RUN...]``: PNG plots of a run's logs (TRL's ``trainer_state.json``,
``completions.jsonl``, ``alerts.jsonl``), other runs drawn over them, in one self-contained ``report.html``;
``report.json`` lists each plot's series so tools and tests check them without reading pixels.
"""

from __future__ import annotations

import base64
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from jinja2 import Template
from markupsafe import Markup

from grpo_trl.errors import GrpoTrlError
from grpo_trl.io import read_json, read_jsonl, write
from grpo_trl.monitor.heldout import KIND as DIVERGING
from grpo_trl.monitor.heldout import is_heldout
from grpo_trl.report.plots import plot_heldout, plot_history, plot_title
from grpo_trl.run.directory import Manifest, record_entries
from grpo_trl.run.resume import checkpoints

NONE_PREFIX = "reward_none_frac/"  # per logged step, the share of rows a reward scored None


def _trend(history: list[dict], window: int = 20, key: str = "reward") -> tuple[int, float, float] | None:
    """``(w, first, last)``: the mean of ``key`` over the first and last ``w`` training log entries (with a
    ``loss``), ``w`` being ``window`` and at most half the entries; None without one."""
    values = [h[key] for h in history if "loss" in h and isinstance(h.get(key), int | float) and math.isfinite(h[key])]
    w = min(window, max(1, len(values) // 2))
    return (w, sum(values[:w]) / w, sum(values[-w:]) / w) if values else None


def reward_trend(history: list[dict], window: int = 20, key: str = "reward") -> tuple[float, float] | None:
    """Mean of ``key`` over the first and last ``window`` (at most half) training log entries, or None."""
    return (trend := _trend(history, window, key)) and trend[1:]


def trend_text(history: list[dict], arrow: str = "->") -> str | None:
    """``reward mean, first vs last N logged steps: A -> B``, the words the summary, card and report share."""
    if (trend := _trend(history)) is None:
        return None
    steps = "logged step" if trend[0] == 1 else f"{trend[0]} logged steps"
    return f"reward mean, first vs last {steps}: {trend[1]:.3f} {arrow} {trend[2]:.3f}"


def none_shares(history: list[dict]) -> dict[str, float]:
    """Per reward, the mean share of rows scored ``None`` over the logged steps (``reward_none_frac/<name>``)."""
    values: dict[str, list[float]] = {}
    for h in history:
        for key, value in h.items():
            if key.startswith(NONE_PREFIX) and isinstance(value, int | float):
                values.setdefault(key[len(NONE_PREFIX) :], []).append(float(value))
    return {name: sum(v) / len(v) for name, v in values.items()}


def log_entries(history: Any) -> list[dict]:
    """The objects of a ``log_history``; an integer beyond a float's range (JSON allows one) as inf, which every
    reader leaves out (float arithmetic on it raised OverflowError)."""
    if not isinstance(history, list):
        return []
    big = lambda v: isinstance(v, int) and abs(v) > sys.float_info.max  # noqa: E731
    return [{k: math.inf if big(v) else v for k, v in h.items()} for h in history if isinstance(h, dict)]


def _histories(output_dir: Path) -> tuple[list[dict], list[dict], list[dict]]:
    """The run's (or newest checkpoint's) training entries (with a loss), evaluation entries (``eval_`` prefix
    removed) and held-out ones, from trainer_state.json through the bounded reader."""
    path = output_dir / "trainer_state.json"
    if not path.exists():
        states = (c / "trainer_state.json" for c in checkpoints(output_dir))  # newest first
        if (path := next((p for p in states if p.is_file()), None)) is None:
            why = f"no trainer_state.json in {output_dir} or its checkpoints; is it a training output_dir?"
            raise GrpoTrlError(why, file=str(output_dir))
    try:
        state = read_json(path)  # a FIFO or a huge file is refused
    except (OSError, ValueError) as exc:
        why = f"{path} is unreadable ({type(exc).__name__}: {str(exc)[:120]})"
        raise GrpoTrlError(why, file=str(output_dir)) from None
    if not isinstance(history := state.get("log_history") if isinstance(state, dict) else None, list):
        raise GrpoTrlError(f"{path} has no log_history list: not a trainer state", file=str(output_dir))
    logs = [h for h in log_entries(history) if isinstance(h.get("step"), int)]
    evals = [{"step": h["step"], **{k[5:]: v for k, v in h.items() if k.startswith("eval_")}} for h in logs]
    return [h for h in logs if "loss" in h], [e for e in evals if len(e) > 1], [h for h in logs if is_heldout(h)]


def _sample(s: dict) -> dict:
    """A logged completion as the page shows it; with tools, its ``turns`` one block each ([assistant], [tool])."""
    turns, rewards = s.get("turns"), s.get("rewards")
    return {
        "step": s["step"], "prompt": str(s.get("prompt", ""))[-400:], "completion": s.get("completion", ""),
        "turns": None if not turns else [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else [],
        "rewards": ", ".join(f"{k}={v}" for k, v in (rewards if isinstance(rewards, dict) else {}).items()),
        "advantage": s.get("advantage"),
    }  # fmt: skip


def write_report(output_dir: str | Path, others: Sequence[str | Path] = ()) -> str:
    """Write ``<output_dir>/report/`` (PNGs, report.json, report.html), ``others`` drawn over it; the HTML path.
    A folder that cannot be written is one error naming what could not be written."""
    output_dir = Path(output_dir)
    dirs = [output_dir, *map(Path, others)]
    names = [d.name or str(d) for d in dirs]
    names = [str(d) if names.count(n) > 1 else n for d, n in zip(dirs, names)]  # a shared name: the whole path
    runs = [(n, *_histories(d)) for n, d in zip(names, dirs)]
    try:
        return _write_report(output_dir, runs)
    except OSError as exc:
        raise GrpoTrlError(
            f"cannot write {exc.filename or output_dir / 'report'} ({exc.strerror or exc})",
            file=str(output_dir),
            fix="make the folder writable, or copy the output_dir somewhere writable and run grpo-trl report there",
        ) from None


def _write_report(output_dir: Path, runs: list) -> str:
    out, history = output_dir / "report", runs[0][1]
    if out.is_symlink():  # its files are replaced as grpo-trl's own: never in a folder elsewhere
        raise GrpoTrlError(f"{out} is a symbolic link: grpo-trl never writes through one", file=str(output_dir))
    manifest = Manifest.load(output_dir)
    if out.exists() and manifest.exists and "report" not in manifest.entries:
        raise GrpoTrlError(
            f"{out} exists and grpo-trl did not write it (not in .grpo-trl/manifest.json)",
            file=str(output_dir),
            fix="move it away: the report would write into it and `train --overwrite` would then remove it",
        )
    record_entries(output_dir, "report")  # grpo-trl's own entry: `train --overwrite` may replace it
    out.mkdir(parents=True, exist_ok=True)
    samples, alerts = ([r for r in read_jsonl(output_dir / f) if isinstance(r.get("step"), int)] for f in
                       ("completions.jsonl", "alerts.jsonl"))  # fmt: skip
    zero: set[str] = set()
    diverged = [a["step"] for a in alerts if a.get("kind") == DIVERGING]
    drawn = plot_heldout([(n, h, held) for n, h, _, held in runs], out, diverged)
    drawn.update(plot_history([(n, h, e) for n, h, e, _ in runs], out, zero))
    trend = _trend(history)  # the same numbers as the end-of-run summary of `grpo-trl train`
    first, last = (history[0], history[-1]) if history else ({}, {})
    summary = {
        "steps_logged": len(history), "first_step": first.get("step"), "last_step": last.get("step"),
        "reward_first": first.get("reward"), "reward_last": last.get("reward"),
        "reward_trend": list(trend[1:]) if trend else None, "reward_trend_window": trend[0] if trend else 1,
        "plots": drawn, "alerts": alerts, "reward_none_share": none_shares(history), "always_zero": sorted(zero),
        "overlaid": [n for n, *_ in runs[1:]],
    }  # fmt: skip
    write(out / "report.json", json.dumps(summary, indent=2), mine=True)  # report/ is grpo-trl's
    steps = sorted({s["step"] for s in samples})
    chosen = sorted({steps[0], steps[len(steps) // 2], steps[-1]}) if steps else []
    rows = [_sample(s) for step in chosen for s in [x for x in samples if x["step"] == step][:3]]
    arrow = lambda t: Markup("{:.3f} &rarr; {:.3f}".format(*t)) if t else "no reward logged"  # noqa: E731
    page = Template((Path(__file__).with_name("page.html")).read_text(encoding="utf-8"), autoescape=True).render(
        output_dir=output_dir, s=summary, trend=trend_text(history, "&rarr;"), samples=rows, title=plot_title,
        shares=[[k, f"{v:.1%}"] for k, v in sorted(summary["reward_none_share"].items())],
        runs=[[n, ("solid", "dashed", "dotted", "dash-dot")[i % 4], len(h), arrow(reward_trend(h))]
              for i, (n, h, _, _) in enumerate(runs)],
        shown=[f for f in drawn if f not in zero], folded=[f for f in drawn if f in zero],  # every value 0: folded
        png=lambda f: base64.b64encode((out / f).read_bytes()).decode(),
    )  # fmt: skip
    write(out / "report.html", page, mine=True)
    return str(out / "report.html")
