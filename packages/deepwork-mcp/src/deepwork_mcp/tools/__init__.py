"""MCP tool adapters: each module registers a few thin tools on a FastMCP server."""
