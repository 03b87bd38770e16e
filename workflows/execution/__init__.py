"""Running a workflow's rounds: launching, setting up, driving the engine, recording events."""
