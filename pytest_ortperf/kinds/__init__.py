"""Check kinds: one module per kind of check, each declared once and registered (``registry.py``)."""
