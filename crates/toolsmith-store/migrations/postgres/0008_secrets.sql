-- Secrets at rest: a value sealed with the registry's key, so that a wrong key is told at
-- start; its presence says every secret config value was sealed.
CREATE TABLE registry_secrets (
    id          INTEGER PRIMARY KEY CHECK (id = 1),
    key_check   TEXT NOT NULL
);
