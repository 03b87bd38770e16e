"""The Plan -> Act -> Observe -> Refine loop, free of Django: it yields typed events."""
