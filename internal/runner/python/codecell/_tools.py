"""codecell's own tools as functions: the same tools, arguments and results
as the MCP tools of the same names, which a host may not list (the default
lists only execute_code and search_tools). search_tools finds them as
codecell.<name>; get_tool_definition("codecell.<name>") describes one.

Each returns the tool's structured result as Python values and raises
ValueError (a bad argument, naming it), TypeError (a missing or mistyped
argument) or RuntimeError (the tool failed).
"""

from codecell._rpc import request as _request


def _call(tool, args):
    args = {k: v for k, v in args.items() if v is not None}
    return _request("codecell", {"tool": tool, "arguments": args})


# workspace: files of the working directory (plain open() works too; these
# keep the workspace quota and write atomically).


def write_workspace_file(path: str, content: str, encoding: str = None) -> dict:
    """Writes a workspace file atomically; encoding "text" (default) or "base64"."""
    return _call("write_workspace_file", dict(path=path, content=content, encoding=encoding))


def read_workspace_file(path: str, offset: int = None, limit: int = None) -> dict:
    """Reads a workspace file: {path, content, encoding, mime_type, size, ...}."""
    return _call("read_workspace_file", dict(path=path, offset=offset, limit=limit))


def list_workspace_files(path: str = None, pattern: str = None) -> dict:
    """Lists workspace files: {files: [{path, size, mod_time, is_dir}], truncated}."""
    return _call("list_workspace_files", dict(path=path, pattern=pattern))


def delete_workspace_file(path: str, recursive: bool = None) -> dict:
    """Deletes a workspace file, link or (recursive) directory."""
    return _call("delete_workspace_file", dict(path=path, recursive=recursive))


# code files: .py files of the workspace built up piece by piece.


def initialize_code_file(content: str, filename: str = None, overwrite: bool = False) -> dict:
    """Creates a .py file in the workspace: {path, size, lines}; an existing filename only with overwrite."""
    return _call("initialize_code_file", dict(content=content, filename=filename, overwrite=overwrite))


def append_to_code_file(path: str, content: str) -> dict:
    """Appends source to a code file."""
    return _call("append_to_code_file", dict(path=path, content=content))


def read_code_file(path: str) -> dict:
    """Reads a code file: {path, size, lines, content}."""
    return _call("read_code_file", dict(path=path))


# sessions


def list_sessions() -> dict:
    """The live interpreter sessions of this namespace."""
    return _call("list_sessions", {})


# skills: saved helper modules, imported with from skills.<name> import f.


def save_skill(name: str, code: str, description: str, tags: list = None) -> dict:
    """Saves code as the skill name (a new version if it exists): {name, version, path, import}."""
    return _call("save_skill", dict(name=name, code=code, description=description, tags=tags))


def load_skill(name: str, version: int = None) -> dict:
    """A saved skill's code and metadata, the latest version unless version is given."""
    return _call("load_skill", dict(name=name, version=version))


def list_skills(query: str = None) -> dict:
    """The saved skills whose name, description or tags contain every word of query."""
    return _call("list_skills", dict(query=query))


def delete_skill(name: str) -> dict:
    """Deletes a skill with all its versions."""
    return _call("delete_skill", dict(name=name))


# environments


def configure_environment(type: str, path: str = None, name: str = None) -> dict:
    """Chooses the Python environment of later executions: system, venv, uv or conda."""
    return _call("configure_environment", dict(type=type, path=path, name=name))


def get_environment_config() -> dict:
    """The environment executions use."""
    return _call("get_environment_config", {})


def install_dependencies(packages: list, index_url: str = None) -> dict:
    """Installs PEP 508 requirements into the namespace's environment, for later executions."""
    return _call("install_dependencies", dict(packages=packages, index_url=index_url))


def check_installed_packages(packages: list) -> dict:
    """Installed version of each distribution, or not installed."""
    return _call("check_installed_packages", dict(packages=packages))


# privacy


def sanitize_pii(text: str) -> dict:
    """Replaces personal data in text by tokens such as [EMAIL_1]: {text, counts}."""
    return _call("sanitize_pii", dict(text=text))


def restore_pii(text: str) -> dict:
    """Replaces this namespace's tokens in text by the original values: {text}.

    Only where codecell's config sets pii.allowRestore; elsewhere it raises
    PermissionError, and help(codecell) does not list it."""
    return _call("restore_pii", dict(text=text))


# analysis


def execute_analysis(analysis_type: str, data=None, source: str = None, parameters: dict = None) -> dict:
    """Filters, aggregates, transforms or validates rows natively: {result, stats}."""
    return _call("execute_analysis", dict(analysis_type=analysis_type, data=data, source=source, parameters=parameters))


# stats and discovery


def get_execution_stats(since: str = None) -> dict:
    """Statistics of this namespace's executions (since: an RFC 3339 time or a duration such as 1h)."""
    return _call("get_execution_stats", dict(since=since))


def list_tool_categories() -> dict:
    """Each upstream server with its state and tool count, and codecell's own tools."""
    return _call("list_tool_categories", {})

