-- The registry: the current state of each tool, and an immutable snapshot per version.
CREATE TABLE tools (
    name        TEXT PRIMARY KEY,
    version     BIGINT NOT NULL,
    enabled     BOOLEAN NOT NULL,
    deleted     BOOLEAN NOT NULL DEFAULT FALSE,
    description TEXT NOT NULL,
    tags        TEXT NOT NULL,          -- ' tag1 tag2 ' for search
    definition  TEXT NOT NULL,          -- the catalog form, as JSON (secrets kept)
    updated_at  BIGINT NOT NULL,        -- unix milliseconds
    updated_by  TEXT NOT NULL
);

CREATE TABLE tool_versions (
    name        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    definition  TEXT NOT NULL,
    created_at  BIGINT NOT NULL,
    author      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
