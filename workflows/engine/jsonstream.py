"""One string field of a JSON object, decoded while the object is still arriving.

Refine may write the round's answer inside its JSON decision ({"decision": "stop", …,
"answer": "…"}); the answer should reach the reader as it is written, not when the whole
object has arrived. `FieldStream` reads the object's text piece by piece and returns the
newly decoded characters of one top-level string field, escapes included (\\n, \\", \\uXXXX
and surrogate pairs), whatever the pieces' boundaries.
"""

from __future__ import annotations

_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


class FieldStream:
    """Feed it the JSON text as it arrives; it returns what is new of `field`'s value."""

    def __init__(self, field: str) -> None:
        self.field = field
        self.depth = 0
        self.in_string = False
        self.escape = ""
        """An escape sequence begun but not finished (a backslash, a partial \\uXXXX)."""
        self.high = ""
        """The high half of a surrogate pair, waiting for its low half."""
        self.text = ""
        """The current string's characters (a key's, or the field's value so far)."""
        self.key: str | None = None
        """The top-level key whose value comes next (after its colon)."""
        self.last_string = ""
        self.capturing = False
        self.done = False

    def feed(self, piece: str) -> str:
        """The characters of the field's value decoded from `piece` ("" when none)."""
        out: list[str] = []
        for char in piece:
            if self.in_string:
                self._string_char(char, out)
            elif char == '"':
                self.in_string, self.text = True, ""
                self.capturing = self.depth == 1 and self.key == self.field and not self.done
            elif char in "{[":
                self.depth += 1
            elif char in "}]":
                self.depth -= 1
            elif self.depth == 1 and char == ":":
                self.key = self.last_string
            elif self.depth == 1 and char == ",":
                self.key = None
        return "".join(out)

    def _string_char(self, char: str, out: list[str]) -> None:
        if self.escape:
            self.escape += char
            decoded = self._escaped()
            if decoded is None:
                return
            self.escape = ""
            self._emit(decoded, out)
        elif char == "\\":
            self.escape = char
        elif char == '"':
            self.in_string = False
            if self.capturing:
                self.capturing, self.done = False, True
            elif self.depth == 1:
                self.last_string = self.text
        else:
            self._emit(char, out)

    def _escaped(self) -> str | None:
        """The escape's character once it is complete (None until then)."""
        kind = self.escape[1]
        if kind != "u":
            return _ESCAPES.get(kind, kind)
        if len(self.escape) < 6:
            return None
        try:
            return chr(int(self.escape[2:6], 16))
        except ValueError:
            return ""

    def _emit(self, char: str, out: list[str]) -> None:
        if 0xD800 <= ord(char) <= 0xDBFF:  # a surrogate pair's high half: wait for the low
            self.high = char
            return
        if self.high:
            high, self.high = self.high, ""
            if 0xDC00 <= ord(char) <= 0xDFFF:
                char = chr(0x10000 + ((ord(high) - 0xD800) << 10) + (ord(char) - 0xDC00))
        self.text += char
        if self.capturing:
            out.append(char)
