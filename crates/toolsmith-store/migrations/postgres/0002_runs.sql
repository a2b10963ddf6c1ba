-- The execution log: one row per call, newest kept up to the retention limit.
CREATE TABLE runs (
    id          BIGSERIAL PRIMARY KEY,
    tool        TEXT NOT NULL,
    version     BIGINT NOT NULL,
    caller      TEXT NOT NULL,
    arguments   TEXT NOT NULL,
    kind        TEXT NOT NULL,
    duration_ms DOUBLE PRECISION NOT NULL,
    exit_code   INTEGER,
    truncated   BOOLEAN NOT NULL,
    started_at  BIGINT NOT NULL
);
CREATE INDEX runs_by_tool ON runs (tool, id);
