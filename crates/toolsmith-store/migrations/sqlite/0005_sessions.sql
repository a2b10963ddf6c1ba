-- Where each session lives (SPEC §5.4): sessions are processes of one server, so a replica
-- that gets a call for another's session can say where it is, or that it was lost with
-- its replica (whose heartbeat, `last_seen_ms`, went stale).
CREATE TABLE sessions (
    id           TEXT PRIMARY KEY,
    replica      TEXT NOT NULL,
    -- host:pid of the server holding it: a server on the same host can tell it is gone.
    place        TEXT NOT NULL,
    owner        TEXT NOT NULL,
    command      TEXT NOT NULL,
    status       TEXT NOT NULL,
    created_ms   BIGINT NOT NULL,
    last_seen_ms BIGINT NOT NULL
);
CREATE INDEX sessions_replica ON sessions (replica, status);
