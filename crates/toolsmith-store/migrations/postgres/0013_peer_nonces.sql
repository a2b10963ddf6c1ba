-- The nonces of forwarded session calls replicas have accepted (SPEC §5.4, §15): a forward's
-- proof holds for one request, so a nonce seen by any replica of the registry is refused by
-- every other. Rows older than the proofs' clock window are removed as new ones arrive.
CREATE TABLE peer_nonces (
    nonce   TEXT PRIMARY KEY,
    at_ms   BIGINT NOT NULL
);
CREATE INDEX peer_nonces_at ON peer_nonces (at_ms);
