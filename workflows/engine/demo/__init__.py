"""The demo model: a deterministic offline policy that speaks the LLM protocol."""
