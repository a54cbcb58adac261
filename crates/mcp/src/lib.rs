//! MCP client (surface.md §10): servers from mcp.json, their tools as kimi-rs tools.
