-- The log level an MCP session's client set (`logging/setLevel`, before protocol 2026-07-28),
-- so that a replica taking up the session passes on its upstreams' log messages at that level.
ALTER TABLE mcp_sessions ADD COLUMN log_level TEXT;
