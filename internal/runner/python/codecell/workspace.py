"""The workspace: the files of the working directory, written atomically within the quota.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import write_workspace_file, read_workspace_file, list_workspace_files, delete_workspace_file

__all__ = _shown(["write_workspace_file", "read_workspace_file", "list_workspace_files", "delete_workspace_file"])
