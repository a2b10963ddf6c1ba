-- Toolsets (SPEC §14): named subsets of the registry, chosen by selectors; versioned like
-- tools. A change moves the registry's generation, so MCP clients hear of it.
CREATE TABLE toolsets (
    name        TEXT PRIMARY KEY NOT NULL,
    version     INTEGER NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    definition  TEXT NOT NULL,          -- the catalog form, as JSON
    updated_at  INTEGER NOT NULL,
    updated_by  TEXT NOT NULL
);

CREATE TABLE toolset_versions (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    definition  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    author      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TRIGGER toolsets_generation_insert AFTER INSERT ON toolsets BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
CREATE TRIGGER toolsets_generation_update AFTER UPDATE ON toolsets BEGIN
    UPDATE registry_generation SET generation = generation + 1 WHERE id = 1;
END;
