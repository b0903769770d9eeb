"""Reports: JSON results, self-contained HTML with plotly, terminal tables; figure functions shared
with the dashboard."""

from collapse_probe.report._html import table_html, write_html_report

__all__ = ["table_html", "write_html_report"]
