"""``make gpu-wheels``: the wheels the offline GPU machine lacks, downloaded here, checked to fit one transfer.

The GPU image (see docs/install.md, "GPU kit") has python 3.12, torch 2.11 (CUDA 13), transformers 5.17, accelerate and
peft, and no trl, datasets or math-verify; nothing can be downloaded there, and at most 64 MiB of files travel with a
command (the repository included). This module lists what to fetch (``PARTS``: pinned, py3.12 manylinux x86_64 or
pure Python, no dependencies resolved against this machine), in two parts because pyarrow alone is 47 MiB, and
``check`` fails when a part would not fit one transfer.

Install there: one call carrying ``wheelhouse/1`` (kept on the machine while it stays warm), then, from the
repository root, a call carrying ``wheelhouse/2`` that runs::

    pip install --no-index --no-deps wheelhouse/*/*.whl && export PYTHONPATH=$PWD

``--no-deps`` because grpo-trl's own pyproject asks for transformers>=5.19 and the image has 5.17: grpo-trl is used
from the checkout (PYTHONPATH) without reinstalling transformers, and the versions that run are the image's torch,
transformers, accelerate and peft plus the wheels below.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# What trl 1.16, datasets 5.2 and math-verify 0.9 need beyond the image (torch, transformers, accelerate, peft and
# their own dependencies: numpy, huggingface-hub, safetensors, tokenizers, pyyaml, jinja2, tqdm, psutil, filelock,
# fsspec, packaging, sympy).
PARTS = {
    "1": ["pyarrow==24.0.0"],
    "2": [
        "trl==1.16.0",
        "datasets==5.2.0",
        "math-verify==0.9.0",
        "latex2sympy2_extended==1.11.0",
        "antlr4-python3-runtime==4.13.2",
        "pandas==2.3.3",
        "python-dateutil",
        "pytz",
        "tzdata",
        "six",
        "dill==0.4.0",
        "multiprocess==0.70.18",
        "xxhash",
        "huggingface-hub==1.31.0",
    ],
}
LIMIT_MIB = 64
REPO_ALLOWANCE_MIB = 6  # the checkout itself travels in the same 64 MiB


def download_command(dest: str, wheels: list[str]) -> list[str]:
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--only-binary=:all:", "--no-deps", "-d", dest]
    cmd += ["--python-version", "3.12", "--implementation", "cp"]
    for p in platforms:
        cmd += ["--platform", p]
    return cmd + wheels


def check(dest: str) -> int:
    budget = LIMIT_MIB - REPO_ALLOWANCE_MIB
    failed = 0
    for part in PARTS:
        files = sorted((Path(dest) / part).glob("*.whl"))
        total = sum(f.stat().st_size for f in files) / 2**20
        for f in files:
            print(f"{f.stat().st_size / 2**20:7.2f} MiB  {part}/{f.name}")
        print(
            f"{total:7.2f} MiB  part {part}: {len(files)} wheels (budget {budget} MiB: {LIMIT_MIB} MiB less the repo)"
        )
        if not files or total > budget:
            print(f"error: {dest}/{part}: {total:.1f} MiB in {len(files)} wheels; a part must hold 1 to {budget} MiB",
                  file=sys.stderr)  # fmt: skip
            failed = 1
    if not failed:
        print(f"on the GPU machine: pip install --no-index --no-deps {dest}/*/*.whl && export PYTHONPATH=$PWD")
    return failed


def main(argv: list[str] | None = None) -> int:
    import subprocess

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("dest", nargs="?", default="wheelhouse")
    parser.add_argument("--check-only", action="store_true")
    args = parser.parse_args(argv)
    if not args.check_only:
        for part, wheels in PARTS.items():
            (Path(args.dest) / part).mkdir(parents=True, exist_ok=True)
            subprocess.run(download_command(str(Path(args.dest) / part), wheels), check=True)
    return check(args.dest)


if __name__ == "__main__":
    raise SystemExit(main())
