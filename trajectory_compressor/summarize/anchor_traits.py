"""What the anchor ranking asks of one anchor, judged once per anchor (anchors recur across rows).

Its kind's weight (`KIND_WEIGHTS`: ids, emails, names and paths above numbers and URLs) and whether it is
an opaque blob (base64, a random token, a key), which the ranking leaves out. See `anchor_rank`.
"""

from __future__ import annotations

from itertools import groupby

from trajectory_compressor.summarize.fidelity.anchor_tokens import anchor_kind

KIND_WEIGHTS = {"id": 0.5, "email": 0.5, "name": 0.5, "path": 0.5, "number": 0.0, "url": 0.0}
OPAQUE_CHARS = 16
_HEX = frozenset("0123456789abcdefABCDEF")


class _KindWeights(dict[str, float]):
    """Anchor -> its kind's weight, looked up in C (`map(kind_weights.__getitem__, ...)`); an
    anchor not seen yet is judged on lookup (`anchor_kind`, itself cached)."""

    def __missing__(self, anchor: str) -> float:
        if len(self) >= 1 << 16:
            self.clear()
        weight = self[anchor] = KIND_WEIGHTS.get(anchor_kind(anchor) or "", 0.0)
        return weight


kind_weights = _KindWeights()  # the one table: anchors recur across rows


_OPAQUE: dict[str, bool] = {}


def opaque(anchor: str) -> bool:
    """A blob (base64, a token, a key), never a name a later turn types: at least
    `OPAQUE_CHARS` letters and digits that switch between upper case, lower case and digits every
    two characters or so (names switch every four or more: `RemovedInDjango40Warning`), and not a
    hex hash (`9f3c2ab71d`, `0x7f23b2e35940`: kept, later turns do quote those)."""
    if len(anchor) < OPAQUE_CHARS:
        return False
    judged = _OPAQUE.get(anchor)
    if judged is None:
        letters = "".join(c for c in anchor if c.isalnum())
        if len(letters) < OPAQUE_CHARS or all(c in _HEX for c in letters.removeprefix("0x")):
            judged = False
        else:
            runs = sum(1 for _ in groupby(letters, _char_class))
            mean_run = len(letters) / runs
            judged = mean_run < 2.0 or (mean_run < 2.4 and any(c.isdigit() for c in letters))
        if len(_OPAQUE) >= 1 << 16:
            _OPAQUE.clear()
        _OPAQUE[anchor] = judged
    return judged


def _char_class(char: str) -> int:
    return 0 if char.isdigit() else 1 if char.isupper() else 2
