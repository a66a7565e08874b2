"""Statistics of this namespace's executions.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import get_execution_stats

__all__ = _shown(["get_execution_stats"])
