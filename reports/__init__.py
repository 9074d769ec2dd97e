"""Renderers: HTML (plotly, inlined, offline), Markdown and JSON, from the analysis document.

Reports draw; they never analyse. Every renderer takes the JSON-ready document dict that
``analyzer`` builds (``docs/contract.md``) and imports nothing from ``analyzer``
or ``parsers``.
"""
