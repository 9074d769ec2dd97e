"""Renderers: HTML (static SVG charts, everything inlined, offline), Markdown and JSON, from the
analysis document.

Reports draw; they never analyse. Every renderer takes the JSON-ready document dict that
``analyzer`` builds (``docs/contract.md``). From ``analyzer`` they import only the document's
type and its check, ``rooftop.analyzer.schema`` (``outputs.write_outputs`` runs
``validate_document`` at this boundary, docs/architecture.md#the-document); nothing from
``parsers`` (``tests/test_stage_imports.py``).
"""

if __name__ != "rooftop.reports":  # one name per module (docs/architecture.md#installing)
    raise ImportError(f"import rooftop.reports, not {__name__}: the stage folders are installed as "
                      "rooftop.parsers, rooftop.analyzer and rooftop.reports (docs/architecture.md#installing)")
