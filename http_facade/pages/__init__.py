"""Pages for people (docs/pages.md): server-rendered HTML on the same app, from the same services.

``install_pages(app)`` (``routers.py``) mounts ``/static`` and includes every page router;
``render`` and ``wants_html`` (``templating.py``, ``negotiation.py``) are what a page route needs.
"""
