-- Where a replica holding a session can be reached (SPEC §5.4, §15): `serve --advertise-url`.
-- A replica that gets a call for another's session forwards it there; empty when the holder
-- gave no reachable address (then the caller is told where the session lives).
ALTER TABLE sessions ADD COLUMN url TEXT NOT NULL DEFAULT '';
