"""`python -m deepwork_mcp` runs the `deepwork` command line."""

from deepwork_mcp.cli import main

main()
