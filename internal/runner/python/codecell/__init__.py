_DOC = """codecell inside the sandbox: tool search, and codecell's own tools.

    from codecell import search_tools
    search_tools("create an issue")           # summaries of matching tools
    search_tools("", server="github", detail_level="name_only", limit=50)

The upstream tools are functions of the generated `servers` package
(`from servers.github import create_issue`); its source and INDEX.md are
readable under /codecell/gen/servers.

codecell's own tools are functions here, with the arguments and results of
the MCP tools of the same names (search_tools finds them as codecell.<name>):

{tools}

`from codecell import save_skill` and `from codecell import skills;
skills.save_skill(...)` are the same function. display_image(...) shows an
image to the model, as matplotlib figures left open are.
"""

from codecell._display import display_image
from codecell._rpc import Image, ToolError, request as _request
from codecell._tools import (
    write_workspace_file, read_workspace_file, list_workspace_files, delete_workspace_file,
    initialize_code_file, append_to_code_file, read_code_file,
    list_sessions,
    save_skill, load_skill, list_skills, delete_skill,
    configure_environment, get_environment_config, install_dependencies, check_installed_packages,
    sanitize_pii, restore_pii,
    execute_analysis,
    get_execution_stats,
    list_tool_categories,
)

import sys as _sys

# The tools by group, as the docstring's table and the submodules show them
# (codecell.privacy holds the privacy group's, and so on).
_GROUPS = [
    ("workspace", ["write_workspace_file", "read_workspace_file", "list_workspace_files", "delete_workspace_file"]),
    ("code_files", ["initialize_code_file", "append_to_code_file", "read_code_file"]),
    ("skills", ["save_skill", "load_skill", "list_skills", "delete_skill"]),
    ("env", ["configure_environment", "get_environment_config", "install_dependencies", "check_installed_packages"]),
    ("privacy", ["sanitize_pii", "restore_pii"]),
    ("analysis", ["execute_analysis"]),
    ("stats", ["get_execution_stats"]),
    ("sessions", ["list_sessions"]),
    ("discovery", ["search_tools", "get_tool_definition", "list_tool_categories"]),
]
# What is always here: search_tools and get_tool_definition are requests
# of their own, not tools called through the host's "codecell" call.
_ALWAYS = {"search_tools", "get_tool_definition", "display_image", "ToolError", "Image"}
_ALL = ["search_tools", "get_tool_definition", "list_tool_categories", "display_image", "ToolError", "Image"] + [
    n for group, names in _GROUPS if group != "discovery" for n in names]
_callable = None  # the tools code can call in this execution (_only), None: every one


def _shown(names):
    """The names of names that help shows: the tools code can call here."""
    return [n for n in names if _callable is None or n in _callable or n in _ALWAYS]


def _only(tools):
    """Shows, in help(codecell), __all__ and the submodules', only the tools
    of tools (the host's list of those code can call in this execution:
    restore_pii only where the config allows it, the env tools only where
    there are environments, none that the policy denies); None shows every
    one. The others stay importable, and a call says why it fails."""
    global _callable, __all__, __doc__
    _callable = None if tools is None else set(tools)
    __all__ = _shown(_ALL)
    rows = []
    for group, names in _GROUPS:
        names = _shown(names)
        if names:
            rows.append("    %-11s %s" % (group, " ".join(names)))
    __doc__ = _DOC.format(tools="\n".join(rows))
    for group, names in _GROUPS:
        mod = _sys.modules.get("codecell." + group)
        if mod is not None:
            mod.__all__ = _shown(names)


_only(None)


class Found(list):
    """search_tools' answer: a list of tool entries, best first, with total
    (how many match in all) and note (set when nothing matched: the entries
    are then the nearest by spelling, and it says where to look)."""

    def __init__(self, tools, total=0, note=""):
        super().__init__(tools)
        self.total = total
        self.note = note

    def __repr__(self):
        text = super().__repr__()
        if self.note:
            text += "  # " + self.note
        return text


def search_tools(query: str = "", server: str = None, detail_level: str = "summary", limit: int = 10):
    """Finds tools by what they do, ranked best first: the upstream tools
    (from servers.<server> import <tool>) and codecell's own (codecell.<tool>:
    from codecell import <tool>).

    detail_level is "name_only", "summary" (adds the first sentence of the
    description and the Python signature) or "full" (adds the schemas and the
    generated source).
    """
    params = {"query": query, "detail_level": detail_level, "limit": limit}
    if server is not None:
        params["server"] = server
    out = _request("search_tools", params) or {}
    return Found(out.get("tools") or [], out.get("total", 0), out.get("note", ""))


def get_tool_definition(name: str):
    """The full entry of one tool, by its "server.tool" name."""
    return _request("get_tool_definition", {"name": name})
