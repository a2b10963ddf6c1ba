-- The registry: the current state of each tool, and an immutable snapshot per version.
CREATE TABLE tools (
    name        TEXT PRIMARY KEY NOT NULL,
    version     INTEGER NOT NULL,
    enabled     INTEGER NOT NULL,
    deleted     INTEGER NOT NULL DEFAULT 0,
    description TEXT NOT NULL,
    tags        TEXT NOT NULL,          -- " tag1 tag2 " for search
    definition  TEXT NOT NULL,          -- the catalog form, as JSON (secrets kept)
    updated_at  INTEGER NOT NULL,       -- unix milliseconds
    updated_by  TEXT NOT NULL
);

CREATE TABLE tool_versions (
    name        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    definition  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    author      TEXT NOT NULL,
    summary     TEXT NOT NULL,
    PRIMARY KEY (name, version)
);
