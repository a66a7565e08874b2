"""Filter, aggregate, transform or validate rows natively, without an interpreter loop.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import execute_analysis

__all__ = _shown(["execute_analysis"])
