"""One room for events.

The contract of every event a viewer receives, the append to the event log, the broadcast to
viewers and the rendering to HTML. The socket (`live`) and the runs (`execution`) both depend on
it, and not on each other's internals.
"""
