"""Live interpreter sessions of execute_code.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell._tools import list_sessions

__all__ = ["list_sessions"]
