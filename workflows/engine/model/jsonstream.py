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


class TailStream:
    """Feed it a reply that is a JSON object followed by plain text (the answer to the user
    written after refine's or the review's JSON); it returns what is new of that text, without
    the line break after the object, a code fence that closes it, or blank space at its end."""

    def __init__(self) -> None:
        self.depth = 0
        self.in_string = False
        self.escape = False
        self.closed = False
        self.pending = ""
        """Text after the object held back until it is more than blank space or a fence."""
        self.started = False

    def feed(self, piece: str) -> str:
        """The characters of the text after the object decoded from `piece` ("" when none)."""
        out: list[str] = []
        for char in piece:
            if self.closed:
                out.append(char)
            elif self.in_string:
                if self.escape:
                    self.escape = False
                elif char == "\\":
                    self.escape = True
                elif char == '"':
                    self.in_string = False
            elif char == '"' and self.depth:
                self.in_string = True
            elif char == "{":
                self.depth += 1
            elif char == "}" and self.depth:
                self.depth -= 1
                self.closed = self.depth == 0
        return self._text("".join(out))

    def _text(self, text: str) -> str:
        if self.started:  # blank space at the end is held back until text follows it
            text = self.pending + text
            body = text.rstrip()
            self.pending = text[len(body) :]
            return body
        if not text:
            return ""
        self.pending += text
        head = self.pending.lstrip()
        if not head:
            return ""
        if head.startswith("`"):  # a fence closing the object: drop its line
            if "\n" not in head:
                return ""
            head = head.split("\n", 1)[1].lstrip()
            if not head:
                self.pending = ""
                return ""
        self.started, self.pending = True, ""
        return self._text(head)
