"""The CPU demos' claim: GRPO through grpo-trl makes builtin:tiny-countdown better at held-out Countdown problems and
builtin:tiny-gsm8k better at held-out GSM8K-shaped word problems, and the rise comes from the reward signal (the same
run with the scores shuffled across completions does not rise).

Each test runs ``recipes/demo/tiny-countdown.yaml`` or ``tiny-gsm8k.yaml`` as ``make demo`` / ``make demo-gsm8k`` do
(same seeds), on one warm-up per module. Thresholds leave room for noise: see docs/figures.md, "The demo", for the
spread measured across runs.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from grpo_trl.check import load_recipe
from grpo_trl.cli import train_main
from tests.conftest import shared_build

DEMOS = Path(__file__).resolve().parents[2] / "recipes" / "demo"
DEMO = DEMOS / "tiny-countdown.yaml"
GSM8K_DEMO = DEMOS / "tiny-gsm8k.yaml"
HELD_OUT = 500  # greedy, on the test split: other problems than the training rows and the warm-up's


def _one_thread_build(tmp_path_factory, name: str, build) -> str:
    """A warm-up, once per test run (shared by the xdist workers); one torch thread as the Makefile runs
    (OMP_NUM_THREADS=1): much faster on a busy CPU."""
    import torch

    def one_thread(folder):
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            return build(folder / "model")
        finally:
            torch.set_num_threads(threads)

    return shared_build(tmp_path_factory, name, one_thread)


@pytest.fixture(scope="module")
def warm_model(tmp_path_factory):
    from grpo_trl.models.tiny_countdown import build_tiny_countdown_model

    return _one_thread_build(tmp_path_factory, "tiny-countdown", build_tiny_countdown_model)


@pytest.fixture(scope="module")
def gsm8k_model(tmp_path_factory):
    from grpo_trl.models.tiny_gsm8k import build_tiny_gsm8k_model

    return _one_thread_build(tmp_path_factory, "tiny-gsm8k", build_tiny_gsm8k_model)


def never_seen() -> set[int]:
    """Indexes of the held-out Countdown problems whose numbers and target are in no training row nor warm-up row (the
    space of two-number problems is small: about 4 in 10 held-out problems also occur among those 6,000 rows)."""
    from grpo_trl.data.countdown import generate_problems, split_seed
    from grpo_trl.models.tiny_countdown import warmup_rows

    data = yaml.safe_load(DEMO.read_text())["data"]

    def key(row):
        return tuple(sorted(row["nums"])), row["target"]

    seen = {key(r) for r in generate_problems(data["size"], 0, 2, 2)} | {key(r) for r in warmup_rows(4000)}
    return {i for i, r in enumerate(generate_problems(HELD_OUT, split_seed("test", 0), 2, 2)) if key(r) not in seen}


def _accuracy(recipe_path: Path, model: str, out: Path, unseen: set[int]) -> tuple[float, float]:
    """Greedy accuracy on the held-out problems, and on those of them (``unseen``) never seen in training."""
    from grpo_trl.eval import evaluate

    report = evaluate(
        load_recipe(recipe_path), model=model, split="test", n=1, temperature=0, limit=HELD_OUT, batch_size=250,
        output_dir=str(out),
    )  # fmt: skip
    assert report["prompts"] == HELD_OUT
    rows = [json.loads(line) for line in (out / "eval_completions.jsonl").read_text().splitlines()]
    return report["pass@1"], sum(r["passed"] for r in rows if r["prompt_index"] in unseen) / len(unseen)


def _recipe(folder: Path, model: str, demo: Path, rewards: list | None = None) -> Path:
    raw = yaml.safe_load(demo.read_text())
    raw["model"]["name"] = model
    raw["trainer"]["output_dir"] = str(folder / "run")
    if rewards is not None:
        raw["rewards"] = rewards
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


def _run(tmp_path: Path, tmp_path_factory, model: str, rewards: list | None = None, demo: Path = DEMO) -> tuple:
    """Accuracy before and after GRPO with ``rewards`` (default: the demo's), both scored by the demo's own rewards;
    the warm model's "before" is evaluated once per test run, shared by the run and its control."""
    unseen = never_seen() if demo == DEMO else set(range(HELD_OUT))  # no GSM8K test problem is a training one

    def evaluate_before(folder: Path) -> str:
        return json.dumps(_accuracy(_recipe(folder, model, demo), model, folder / "before", unseen))

    before = tuple(json.loads(shared_build(tmp_path_factory, f"before-{demo.stem}", evaluate_before)))
    assert train_main([str(_recipe(tmp_path, model, demo, rewards))]) == 0
    return before, _accuracy(
        _recipe(tmp_path / "score", model, demo), str(tmp_path / "run"), tmp_path / "after", unseen
    )


def test_never_seen_is_most_of_the_held_out_problems():
    assert 250 <= len(never_seen()) <= 350  # 283: the unseen subset is large enough to measure on


def test_no_gsm8k_held_out_problem_is_a_training_or_warmup_one():
    from grpo_trl.data.countdown import split_seed
    from grpo_trl.data.gsm8k import generate_problems

    size = yaml.safe_load(GSM8K_DEMO.read_text())["data"]["size"]
    seen = {r["key"] for r in generate_problems(size, 0) + generate_problems(4000, split_seed("warmup", 0))}
    assert not seen & {r["key"] for r in generate_problems(HELD_OUT, split_seed("test", 0), test=True)}


COUNTDOWN_GROUP = pytest.mark.xdist_group("demo-countdown")  # one worker warms the model up and runs both
GSM8K_GROUP = pytest.mark.xdist_group("demo-gsm8k")


@pytest.mark.slow
@COUNTDOWN_GROUP
def test_grpo_lifts_held_out_accuracy(tmp_path, tmp_path_factory, warm_model):
    (before, before_unseen), (after, after_unseen) = _run(tmp_path, tmp_path_factory, warm_model)
    assert 0.1 <= before <= 0.35  # the warm-up solves some problems, leaving room
    # measured at 150 steps over trainer seeds 0-3 on an AMD EPYC: +24.8 to +32.4 points (all), +19.8 to +24.4 (never
    # seen); at 150 steps on an Intel Xeon only +12.8 (the warm-up differs by CPU), at 300 steps there +27.2 and +21.2;
    # at 450 steps (now) on the AMD EPYC, seed 0: +35.6 and +29.0
    assert after - before >= 0.15, (before, after)
    assert after_unseen - before_unseen >= 0.12, (before_unseen, after_unseen)  # not only problems seen in training


@pytest.mark.slow
@COUNTDOWN_GROUP
def test_shuffled_reward_does_not_lift_accuracy(tmp_path, tmp_path_factory, warm_model):
    # the countdown scores of each batch, shuffled across its completions: same scores, no link to the answers
    control = [{"name": "tests.e2e.demo_control:shuffled_countdown"}]
    (before, _), (after, _) = _run(tmp_path, tmp_path_factory, warm_model, rewards=control)
    assert after - before <= 0.05, (before, after)  # measured over seeds 0-2: -17.4 to -15.4 points (it drifts)


@pytest.mark.slow
@GSM8K_GROUP
def test_grpo_lifts_gsm8k_accuracy_on_never_seen_problems(tmp_path, tmp_path_factory, gsm8k_model):
    (before, _), (after, _) = _run(tmp_path, tmp_path_factory, gsm8k_model, demo=GSM8K_DEMO)
    assert 0.2 <= before <= 0.6  # the warm-up answers in format and mostly adds, leaving room
    assert after - before >= 0.25, (before, after)  # measured 42.0% -> 76.0% (AMD EPYC, trainer seed 0)


@pytest.mark.slow
@GSM8K_GROUP
def test_shuffled_gsm8k_reward_does_not_lift_accuracy(tmp_path, tmp_path_factory, gsm8k_model):
    control = [{"name": "tests.e2e.demo_control:shuffled_gsm8k"}, {"name": "xml_format"}]
    (before, _), (after, _) = _run(tmp_path, tmp_path_factory, gsm8k_model, rewards=control, demo=GSM8K_DEMO)
    assert after - before <= 0.05, (before, after)  # measured 42.0% -> 17.4% (trainer seed 0)
