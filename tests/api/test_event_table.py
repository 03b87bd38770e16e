"""The documented event table (the README's, or docs/events.md where the README points) says
what the published JSON Schema says: every event type, each with every field of its payload;
and every type has its rendering."""

import re
from pathlib import Path

import pytest
from django.conf import settings

from workflows.events.contract import EVENT_TYPES
from workflows.events.rendering import template_for

HEADER = "| `type` | Payload fields | Meaning |"
ROW = re.compile(r"^\| `(?P<type>[a-z]+)` \| (?P<fields>[^|]*) \| (?P<meaning>[^|]*) \|$")


def documented() -> list[str]:
    """The lines of the document that holds the event table."""
    base = Path(settings.BASE_DIR)
    for path in (base / "docs" / "events.md", base / "README.md"):
        if path.is_file() and HEADER in (lines := path.read_text(encoding="utf-8").splitlines()):
            return lines
    raise AssertionError("no event table in docs/events.md nor in README.md")


def readme_table() -> dict[str, set[str]]:
    """The event table's rows: each type with the field names its payload cell names."""
    lines = documented()
    start = lines.index(HEADER)
    rows: dict[str, set[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            break
        match = ROW.match(line)
        assert match, f"not a row of the event table: {line}"
        rows[match["type"]] = set(re.findall(r"`([A-Za-z]+)`", match["fields"]))
    return rows


@pytest.fixture
def published(client) -> dict[str, set[str]]:
    """The schema served at /api/v1/events.schema.json: each type with its payload's fields."""
    response = client.get("/api/v1/events.schema.json")
    assert response.status_code == 200
    schema = response.json()
    found = {}
    for variant in schema["oneOf"]:
        payload = variant["properties"]["payload"]["$ref"].rsplit("/", 1)[-1]
        found[variant["title"]] = set(schema["$defs"][payload]["properties"])
    return found


@pytest.mark.django_db
def test_the_readme_lists_every_event_type_of_the_schema_and_no_other(published):
    """A type added to the contract without its row in the README, or a row left for a type
    that is gone, fails here."""
    assert sorted(readme_table()) == sorted(published) == sorted(EVENT_TYPES)


@pytest.mark.django_db
def test_the_readme_names_every_payload_field_of_each_type(published):
    """A field added to an event (or renamed) without the README's row saying it fails here."""
    table = readme_table()
    missing = {kind: sorted(fields - table[kind]) for kind, fields in published.items()}
    assert {kind: names for kind, names in missing.items() if names} == {}


def test_the_check_reads_the_rows_it_compares():
    """The table is read whole (a row per type, its fields in backticks), so the checks above
    compare something."""
    table = readme_table()
    assert {"key", "role", "content", "documents"} <= table["message"]
    assert {"promptTokens", "completionTokens", "cachedTokens", "latencyMs"} <= table["usage"]


def test_every_event_type_has_its_rendering():
    """Every type of the contract has its fragment template."""
    for kind in EVENT_TYPES:
        assert (Path(settings.BASE_DIR) / "templates" / template_for(kind)).is_file(), kind
