"""Models: the tiny offline models (``tiny``, ``tiny_countdown``), chat templates, quantization, reward models and
model shapes read from ``config.json``. Nothing here is imported until used."""
