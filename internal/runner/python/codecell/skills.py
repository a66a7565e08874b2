"""Saved skills: helper modules that later code imports with `from skills.<name> import <function>`.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import save_skill, load_skill, list_skills, delete_skill

__all__ = _shown(["save_skill", "load_skill", "list_skills", "delete_skill"])
