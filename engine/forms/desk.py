"""What the symbolic process keeps between the Forms pane's questions (engine/forms/questions.py): the forms
derived for the last few sources, where the listing of a weight's terms stopped (so "list 5,000 more" goes on
from there instead of walking the first ones again), and the console with its variables. It holds symbols
only, never torch (tests/engine/forms/test_without_torch.py)."""

from __future__ import annotations

import itertools
from collections import OrderedDict
from collections.abc import Iterator

from .console import Console
from .derive import Forms, Term
from .source import Source

KEPT = 4   # derivations kept: the chain and the model, and the last ones switched between


class Desk:
    def __init__(self):
        self._forms: OrderedDict[Source, Forms] = OrderedDict()
        self._listing: dict[tuple[Source, str], tuple[Iterator[Term], int]] = {}  # -> (terms left, position)
        self.console = Console()

    def forms(self, source: Source) -> Forms:
        forms = self._forms.get(source)
        if forms is None:
            forms = self._forms[source] = source.derive()
            while len(self._forms) > KEPT:
                old, _ = self._forms.popitem(last=False)
                for key in [k for k in self._listing if k[0] == old]:
                    del self._listing[key]
        self._forms.move_to_end(source)
        return forms

    def terms_from(self, source: Source, weight: str, start: int) -> Iterator[Term]:
        """`weight`'s terms in Leibniz order from its `start`-th: the listing under way goes on where it
        stopped; another start walks again from the first."""
        key = (source, weight)
        kept = self._listing.pop(key, None)
        if kept is not None and kept[1] == start:
            return kept[0]
        return itertools.islice(self.forms(source).iter_terms(weight), start, None)

    def keep_listing(self, source: Source, weight: str, rest: Iterator[Term], position: int) -> None:
        self._listing[(source, weight)] = (rest, position)

    def console_for(self, source: Source) -> Console:
        """The console, with `net` the network of the source the pane shows (the user's own variables kept)."""
        self.console.env["net"] = self.forms(source).net
        return self.console
