"""Personal data: tokens such as [EMAIL_1] in place of values, and back.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import sanitize_pii, restore_pii

__all__ = _shown(["sanitize_pii", "restore_pii"])
