-- The execution log: one row per call, newest kept up to the retention limit.
CREATE TABLE runs (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    tool        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    caller      TEXT NOT NULL,
    arguments   TEXT NOT NULL,          -- JSON, cut to 4 KiB
    kind        TEXT NOT NULL,          -- "ok" or the error kind
    duration_ms REAL NOT NULL,
    exit_code   INTEGER,
    truncated   INTEGER NOT NULL,
    started_at  INTEGER NOT NULL
);
CREATE INDEX runs_by_tool ON runs (tool, id);
