"""Exports of a session: one self-contained HTML page (:mod:`pi_core.export.html`).

Importing this package loads nothing heavy; the page's libraries (Jinja2, markdown-it-py,
Pygments) are imported when a page is rendered.
"""
