"""Live interpreter sessions of execute_code.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import list_sessions

__all__ = _shown(["list_sessions"])
