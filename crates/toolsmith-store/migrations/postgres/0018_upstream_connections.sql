-- OAuth connections to upstream MCP servers (SPEC §11): what an authorization server
-- granted toolsmith for one server — shared (`subject` empty) or for one caller — as a
-- definition-shaped document whose one secret config value (the credentials) is sealed
-- with the registry's key, so `secrets rotate-key` re-seals it with the definitions.
CREATE TABLE upstream_connections (
    server     TEXT NOT NULL,
    subject    TEXT NOT NULL,
    credentials TEXT NOT NULL,
    at_ms      BIGINT NOT NULL,
    PRIMARY KEY (server, subject)
);
