"""Watching a run: trainer callbacks (alerts, completion samples, generation time) and the one-line console."""
