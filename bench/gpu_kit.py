"""``make gpu-wheels``: the wheels the offline GPU machine lacks, downloaded here, checked to fit one transfer.

The GPU image (see docs/install.md, "GPU kit") has python 3.12, torch 2.11 (CUDA 13), transformers 5.17, accelerate and
peft, pyarrow and pandas, and no trl, datasets, math-verify or pydantic; nothing can be downloaded there, and at most
64 MiB of files travel with a command (the repository included). This module lists what to fetch (``PARTS``: pinned,
py3.12 manylinux x86_64 or pure Python, no dependencies resolved against this machine), and ``check`` fails when a
part would not fit one transfer.

Install there, from the repository root, in the call that carries ``wheelhouse``::

    pip install --no-index --no-deps wheelhouse/*/*.whl && export PYTHONPATH=$PWD

``--no-deps`` because grpo-trl's own pyproject asks for transformers>=5.19 and the image has 5.17: grpo-trl is used
from the checkout (PYTHONPATH) without reinstalling transformers, and the versions that run are the image's torch,
transformers, accelerate and peft plus the wheels below.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

# What trl 1.16, datasets 5.2, math-verify 0.9 and grpo-trl's pydantic schema need beyond the image, at the versions
# requirements.lock pins. The image already has torch, transformers, accelerate, peft, pyarrow, pandas, xxhash,
# huggingface-hub, pyyaml, jinja2 and their own dependencies (its package list, read 2026-11-17); bitsandbytes makes
# QLoRA measurable. Installed this way on an H100 on 2026-11-26: 12 wheels, 45.9 MiB, one transfer.
PARTS = {
    "1": [
        "trl==1.16.0",
        "datasets==5.2.0",
        "math-verify==0.9.0",
        "latex2sympy2_extended==1.11.0",
        "antlr4-python3-runtime==4.13.2",
        "dill==0.4.1",
        "multiprocess==0.70.19",
        "pydantic==2.14.4",
        "pydantic-core==2.50.5",
        "annotated-types==0.8.0",
        "typing-inspection==0.4.5",
        "bitsandbytes==0.50.2",
    ],
}
LIMIT_MIB = 64
REPO_ALLOWANCE_MIB = 6  # the checkout itself travels in the same 64 MiB


def download_command(dest: str, wheels: list[str]) -> list[str]:
    platforms = ["manylinux_2_28_x86_64", "manylinux_2_24_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64"]
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
