"""One training session's output directory: names, lock and heartbeat, manifest, staged writes, resume, export."""
