"""Suggestions at the cursor: ghost text (inline_completion.py) and the completion fallback
(completion.py), both served by service.py with its typed-ahead cache (cache.py)."""
