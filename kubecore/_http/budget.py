"""How many long requests of one kind (log follows, watches) may be open at once, with a share of
their own for requests without a token, so that anonymous readers can never take them all."""

from __future__ import annotations

import attrs


@attrs.define
class Budget:
    """At most ``limit`` held at once, of which at most ``anonymous_limit`` without a token. Not
    thread-safe: the caller holds a lock."""

    limit: int
    anonymous_limit: int
    held: int = 0
    anonymous: int = 0

    def take(self, anonymous: bool) -> str:
        """Take one; "" when taken, else why not (for the 429's message)."""
        if self.held >= self.limit:
            return f"at most {self.limit} at once"
        if anonymous and self.anonymous >= self.anonymous_limit:
            return f"at most {self.anonymous_limit} at once without a token"
        self.held += 1
        self.anonymous += anonymous
        return ""

    def give_back(self, anonymous: bool) -> None:
        """Give back one taken with the same ``anonymous``."""
        self.held -= 1
        self.anonymous -= anonymous
