"""One training session's output directory: names, lock, manifest, staged writes, resume, export."""
