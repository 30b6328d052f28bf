"""The dashboard at /ui: a static page and its scripts, served from this package.

The page is public (it holds no data); its scripts call /v1 and the event stream with the
token the user types, kept in the tab's sessionStorage. Nothing is loaded from elsewhere:
the page's Content-Security-Policy allows only this origin.
"""
