"""The loop itself.

A round, its modes (React, Actionplan, Reasoning), one action's run, observation, refinement's
limits, the review and the final answer.
"""
