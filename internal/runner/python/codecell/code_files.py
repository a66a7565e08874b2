"""Code files: .py files of the workspace built up piece by piece (run one with runpy.run_path).

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import initialize_code_file, append_to_code_file, read_code_file

__all__ = _shown(["initialize_code_file", "append_to_code_file", "read_code_file"])
