"""The Python environment of later executions, and its packages.

The same functions as `from codecell import ...`; see codecell._tools.
"""

from codecell import _shown
from codecell._tools import configure_environment, get_environment_config, install_dependencies, check_installed_packages

__all__ = _shown(["configure_environment", "get_environment_config", "install_dependencies", "check_installed_packages"])
