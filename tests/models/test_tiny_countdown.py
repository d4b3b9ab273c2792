"""builtin:tiny-countdown's pieces that run in a second: warm-up rows, the demo's table, its place among built-ins."""

from __future__ import annotations

import json

from grpo_trl.data.countdown import generate_problems, split_seed
from grpo_trl.models.builtin import BUILDERS
from grpo_trl.models.tiny_countdown import accuracy_table, warmup_rows
from grpo_trl.rewards.countdown import countdown
from grpo_trl.run.names import kind_of


def test_clean_warmup_answers_score_one_and_noisy_ones_subtract():
    clean, noisy = warmup_rows(200, noise=0.0), warmup_rows(200, noise=1.0)
    nums, target = [r["nums"] for r in clean], [r["target"] for r in clean]
    scores = countdown([r["completion"] for r in clean], nums=nums, target=target)
    assert scores == [1.0] * 200
    assert all(r["completion"] == f"<answer>{max(r['nums'])} - {min(r['nums'])}</answer>" for r in noisy)


def test_warmup_rows_are_other_draws_than_the_train_and_test_splits():
    rows = [(r["nums"], r["target"]) for r in warmup_rows(50)]
    for seed in (0, split_seed("test", 0)):
        assert rows != [(r["nums"], r["target"]) for r in generate_problems(50, seed, 2, 2)]


def test_accuracy_table(tmp_path):
    for name, acc in (("before", 0.2), ("after", 0.524)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "eval.json").write_text(
            json.dumps({"pass@1": acc, "prompts": 500, "split": "test", "pass_reward": "countdown"})
        )
    table = accuracy_table(tmp_path / "before", tmp_path / "after")
    assert "20.0%" in table and "52.4%" in table and "+32.4 points" in table
    assert "(countdown reward, greedy, 500 problems of the 'test' split)" in table
    assert f"{tmp_path / 'before' / 'eval.json'}, {tmp_path / 'after' / 'eval.json'})" in table  # where they are


def test_builtin_and_its_folder_are_known():
    assert "builtin:tiny-countdown" in BUILDERS and kind_of("tiny-countdown") == "cache"
