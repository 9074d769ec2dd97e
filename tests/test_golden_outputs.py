"""Whole command-line runs give byte-identical outputs to the goldens (tests/golden_outputs.py).

Fixture outputs are compared byte for byte with ``tests/golden/outputs/``; the corpus sample with
the digests in ``tests/golden/corpus.sha256`` (skipped without ``../shared``). A failure lists each
output that changed: if the change is intended, ``make golden`` rewrites them, and the commit says
why.
"""

from __future__ import annotations

import pytest

from tests import golden_outputs
from tests.conftest import corpus_dir


def test_fixture_outputs_identical_to_goldens() -> None:
    changed = list(golden_outputs.differences(fixtures=True))
    assert not changed, "outputs differ from the goldens (make golden if intended):\n" + "\n".join(changed)


@pytest.mark.corpus
def test_corpus_sample_outputs_identical_to_goldens() -> None:
    corpus_dir("ncu")
    changed = list(golden_outputs.differences(fixtures=False, corpus=True))
    assert not changed, "outputs differ from the goldens (make golden if intended):\n" + "\n".join(changed)
