"""MCP tool adapters: parse arguments, call core in a worker thread, build the response."""
