-- Upstream MCP servers (SPEC §11): their definitions, versioned like tools; the pinned part
-- of each upstream tool as approved; and what differs from it, waiting for a decision.
CREATE TABLE mcp_servers (
    name        TEXT PRIMARY KEY NOT NULL,
    version     BIGINT NOT NULL,
    deleted     BOOLEAN NOT NULL DEFAULT FALSE,
    definition  TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    updated_by  TEXT NOT NULL
);

CREATE TABLE mcp_server_versions (
    name        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    definition  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    author      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE upstream_pins (
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    pinned      TEXT NOT NULL,
    approved_at BIGINT NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (server, tool)
);

CREATE TABLE upstream_changes (
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    kind        TEXT NOT NULL,
    pinned      TEXT,
    status      TEXT NOT NULL,
    detected_at BIGINT NOT NULL,
    PRIMARY KEY (server, tool)
);

CREATE TRIGGER mcp_servers_generation AFTER INSERT OR UPDATE OR DELETE ON mcp_servers
    FOR EACH STATEMENT EXECUTE FUNCTION toolsmith_bump_generation();
CREATE TRIGGER upstream_changes_generation AFTER INSERT OR UPDATE OR DELETE ON upstream_changes
    FOR EACH STATEMENT EXECUTE FUNCTION toolsmith_bump_generation();
