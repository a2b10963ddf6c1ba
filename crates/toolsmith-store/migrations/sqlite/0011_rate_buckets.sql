-- Rate limits are kept in each process with SQLite (one server per file); the table keeps the
-- schema versions of both backends in step.
CREATE TABLE rate_buckets (
    scope   TEXT NOT NULL,
    key     TEXT NOT NULL,
    tat     INTEGER NOT NULL,
    PRIMARY KEY (scope, key)
);
