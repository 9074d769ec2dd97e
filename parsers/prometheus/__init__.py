"""Prometheus inputs: exposition text (dcgm-exporter scrapes, tsdb dumps), query JSON, a live server."""
