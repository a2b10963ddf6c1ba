-- The Streamable HTTP sessions of MCP clients before protocol 2026-07-28 (SPEC §7): what a
-- client said when it initialized, so any replica of the registry can take up a session
-- another one opened (a request without sticky routing). Rows not touched for longer than a
-- session may idle are removed as new ones are written.
CREATE TABLE mcp_sessions (
    id      TEXT PRIMARY KEY,
    state   TEXT NOT NULL,
    at_ms   BIGINT NOT NULL
);
CREATE INDEX mcp_sessions_at ON mcp_sessions (at_ms);
