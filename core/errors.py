"""The one exception type for problems the user can fix: its message says what is wrong and how to fix it.

The operators report it, the CLI prints it and exits with status 2, live preview turns the rig's preview
off with it. Anything else that escapes is a bug.
"""

from __future__ import annotations


class UserError(ValueError):
    """A problem with the user's rig, settings, terrain or input; the message says how to fix it."""
