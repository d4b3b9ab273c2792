"""``python -m grpo_trl.cli``: the ``grpo-trl`` program."""

from grpo_trl.cli import main

raise SystemExit(main())
