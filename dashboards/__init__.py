"""The Streamlit dashboard shipped with the package; ``collapse-probe dashboard`` serves ``app.py``.

``app.py`` is a Streamlit script, not a module to import: it draws the page when run.
"""
