"""codecell's helpers inside the sandbox.

    from codecell import search_tools
    search_tools("create an issue")           # summaries of matching tools
    search_tools("", server="github", detail_level="name_only", limit=50)

The tools themselves are functions of the generated `servers` package
(`from servers.github import create_issue`); its source is readable under
/codecell/gen/servers. display_image(...) shows an image to the model, as
matplotlib figures left open are.
"""

from codecell._display import display_image
from codecell._rpc import Image, ToolError, request as _request

__all__ = ["search_tools", "get_tool_definition", "display_image", "ToolError", "Image"]


def search_tools(query: str = "", server: str = None, detail_level: str = "summary", limit: int = 10):
    """Finds upstream tools by what they do, ranked best first.

    detail_level is "name_only", "summary" (adds the first sentence of the
    description and the Python signature) or "full" (adds the schemas and the
    generated source).
    """
    params = {"query": query, "detail_level": detail_level, "limit": limit}
    if server is not None:
        params["server"] = server
    return _request("search_tools", params)


def get_tool_definition(name: str):
    """The full entry of one tool, by its "server.tool" name."""
    return _request("get_tool_definition", {"name": name})
