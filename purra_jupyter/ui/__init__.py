"""Widgets over the core: the approval widget (``PendingCall``), argument forms, the live status line.

Everything here shows server text, so every string is escaped; widgets take the core's objects
(``Call``, ``Connection``, ``Bindings``), never the session that composes them.
"""
