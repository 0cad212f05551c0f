"""Dedup: bucket signatures of failures (signatures.py) and the known-bugs file they are matched against (known_bugs.py)."""
