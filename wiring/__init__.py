"""The project's wiring, the top layer: the root URLconf, the docs pages and the dashboard.

It imports the apps; nothing imports it (Django reaches it through ROOT_URLCONF).
"""
