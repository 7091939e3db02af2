"""DeepWork core: the job model, parser, discovery, doc specs, config, sessions and errors.

Pure Python with pydantic and PyYAML; it never imports mcp, fastmcp, click or jinja2.
"""
