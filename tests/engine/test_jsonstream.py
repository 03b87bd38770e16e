"""FieldStream decodes one string field of a JSON object while it arrives, whatever the
pieces' boundaries."""

from __future__ import annotations

import json

import pytest

from workflows.engine.model.jsonstream import FieldStream

ANSWER = 'Line one\nHe said "hi" \\ path/to — café 😀 \t done'
DECISIONS = [
    {"decision": "stop", "reason": "Done.", "criteriaMet": True, "answer": ANSWER},
    {"answer": ANSWER, "decision": "stop"},
    {  # a nested "answer" key and strings that look like keys come first
        "reason": 'not "answer": here',
        "next": {"answer": "nested, not this", "list": ["answer", {"answer": "x"}]},
        "answer": ANSWER,
        "after": "not this either",
    },
]


@pytest.mark.parametrize("decision", DECISIONS)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_every_split_of_the_text_gives_the_field_exactly(decision, ascii_only):
    text = json.dumps(decision, ensure_ascii=ascii_only)
    for cut in range(len(text) + 1):
        stream = FieldStream("answer")
        assert stream.feed(text[:cut]) + stream.feed(text[cut:]) == ANSWER
    stream = FieldStream("answer")
    assert "".join(stream.feed(char) for char in text) == ANSWER


def test_a_missing_or_null_field_gives_nothing():
    for decision in ({"decision": "continue", "answer": None}, {"decision": "stop"}):
        stream = FieldStream("answer")
        assert stream.feed(json.dumps(decision)) == ""


def test_text_before_the_object_and_pretty_printing_do_not_matter():
    text = "Here it is:\n" + json.dumps({"reason": "r", "answer": "A\nB"}, indent=2)
    assert FieldStream("answer").feed(text) == "A\nB"


def test_the_text_after_the_json_comes_whatever_the_pieces() -> None:
    """An answer written after the JSON object streams out without the line break after the
    object, a fence closing it or blank space at its end, the same as split_answer reads it,
    whatever the pieces' boundaries (braces and quotes inside the object's strings do not
    close it)."""
    from workflows.engine.model.formats import split_answer
    from workflows.engine.model.jsonstream import TailStream

    replies = [
        '{"decision":"stop","reason":"A } and a \\\\\\" {","criteriaMet":true}'
        "\nThe *answer*.\n\n- one\n",
        '```json\n{"status":"success","next":{"a":[1,{"b":2}]}}\n```\nHello.  ',
        '{"decision":"continue","reason":"More."}',
    ]
    for reply in replies:
        expected = split_answer(reply).get("answer", "")
        for size in (1, 2, 3, 5, 8, 13):
            stream = TailStream()
            pieces = [reply[i : i + size] for i in range(0, len(reply), size)]
            assert "".join(stream.feed(piece) for piece in pieces) == expected
    assert split_answer(replies[0])["answer"] == "The *answer*.\n\n- one"
