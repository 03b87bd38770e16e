"""What kind of model answered: the demo model, which spends neither tokens nor money (its
figures say "demo"), or a real one.

The one place that recognises the demo model. A live model is known by its label; a stored
usage, step, thought or round event by the model it names, which is that same label, so an
event stored by any release is recognised the same way.
"""

from __future__ import annotations

from workflows.engine.demo.policy import DEMO_LABEL


def is_demo(model: str) -> bool:
    """Whether `model` (a live model's label, or the model a stored event names) is the demo
    model's."""
    return model == DEMO_LABEL


def demo_label() -> str:
    """What users are told answers them when no model is configured."""
    return DEMO_LABEL
