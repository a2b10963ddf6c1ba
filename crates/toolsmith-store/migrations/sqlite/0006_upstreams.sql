-- Upstream MCP servers (SPEC §11): their definitions, versioned like tools; the pinned part
-- of each upstream tool as approved; and what differs from it, waiting for a decision.
CREATE TABLE mcp_servers (
    name        TEXT PRIMARY KEY NOT NULL,
    version     INTEGER NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    definition  TEXT NOT NULL,          -- the catalog form, as JSON (secrets kept)
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL
);

CREATE TABLE mcp_server_versions (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    definition  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    author      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE upstream_pins (
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,          -- the upstream's own name
    pinned      TEXT NOT NULL,          -- what the upstream said, as approved (JSON)
    approved_at INTEGER NOT NULL,
    approved_by TEXT NOT NULL,
    PRIMARY KEY (server, tool)
);

CREATE TABLE upstream_changes (
    server      TEXT NOT NULL,
    tool        TEXT NOT NULL,
    kind        TEXT NOT NULL,          -- added | changed | removed
    pinned      TEXT,                   -- what the upstream says now (JSON); NULL when removed
    status      TEXT NOT NULL,          -- pending | rejected
    detected_at INTEGER NOT NULL,
    PRIMARY KEY (server, tool)
);

CREATE TRIGGER mcp_servers_generation_insert AFTER INSERT ON mcp_servers BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER mcp_servers_generation_update AFTER UPDATE ON mcp_servers BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER upstream_changes_generation_insert AFTER INSERT ON upstream_changes BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER upstream_changes_generation_update AFTER UPDATE ON upstream_changes BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER upstream_changes_generation_delete AFTER DELETE ON upstream_changes BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
