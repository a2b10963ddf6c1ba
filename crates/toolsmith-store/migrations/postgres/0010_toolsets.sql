-- Toolsets (SPEC §14): named subsets of the registry, chosen by selectors; versioned like
-- tools. A change moves the registry's generation, so MCP clients hear of it.
CREATE TABLE toolsets (
    name        TEXT PRIMARY KEY NOT NULL,
    version     BIGINT NOT NULL,
    deleted     BOOLEAN NOT NULL DEFAULT FALSE,
    definition  TEXT NOT NULL,
    updated_at  BIGINT NOT NULL,
    updated_by  TEXT NOT NULL
);

CREATE TABLE toolset_versions (
    name        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    definition  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    author      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TRIGGER toolsets_generation AFTER INSERT OR UPDATE OR DELETE ON toolsets
    FOR EACH STATEMENT EXECUTE FUNCTION toolsmith_bump_generation();
