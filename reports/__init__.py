"""Renderers: the self-contained HTML page (static SVG charts, one inline script, offline),
ticket-ready Markdown (with SVG roofline files), JSON and the terminal summary, from the analysis
document.

Reports draw; they never analyse. Every renderer takes the document the analyzer builds, typed
``rooftop.analyzer.schema.Document`` (``docs/contract.md``), or the typed part it draws
(``Kernel``, ``Finding``, ``Window``, ``RooflinePanel``, ...): mypy checks each key a report reads,
and the vocabularies (labels, limiters, ceiling kinds) come from ``analyzer/schema/vocab.py``. From
``analyzer`` they import only ``rooftop.analyzer.schema`` (``outputs.write_outputs`` runs
``validate_document`` at this boundary, docs/architecture.md#the-document); nothing from
``parsers`` (``tests/test_stage_imports.py``).
"""

if __name__ != "rooftop.reports":  # one name per module (docs/architecture.md#installing)
    raise ImportError(f"import rooftop.reports, not {__name__}: the stage folders are installed as "
                      "rooftop.parsers, rooftop.analyzer and rooftop.reports (docs/architecture.md#installing)")
