"""The API's operations, one router per resource (how one plugs in: workflows/api/__init__.py)."""
