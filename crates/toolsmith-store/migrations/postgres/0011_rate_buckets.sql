-- Rate limits shared by every replica on this registry (SPEC §15): one GCRA bucket per scope
-- (a tool, or a caller limit) and caller, holding its theoretical arrival time in
-- milliseconds of the database's clock. Unlogged: a bucket is written on every limited call,
-- and losing the buckets in a crash (every caller starts with a full bucket) costs nothing
-- that matters, while writing them to the WAL would cost each call an fsync.
CREATE UNLOGGED TABLE rate_buckets (
    scope   TEXT NOT NULL,
    key     TEXT NOT NULL,
    tat     BIGINT NOT NULL,
    PRIMARY KEY (scope, key)
);
