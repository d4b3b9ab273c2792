"""``grpo-trl report``: ``report.html`` and its plots from a run's logs (``page``, ``plots``)."""
