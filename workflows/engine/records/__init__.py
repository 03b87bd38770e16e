"""The engine's typed records.

The events it emits, the protocols it speaks with the world (model, actions, documents), what
the model reads and writes, and what the host hands a round.
"""
