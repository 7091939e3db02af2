"""MCP tool adapters: call core in a worker thread, validate the response model.

Errors are mapped by the `deepwork_mcp.tool_errors.ToolErrors` middleware, never here.
"""
