-- The census of imported password hashes (bcrypt, Firebase scrypt) reads only the accounts whose
-- hash is not Gatehouse's own Argon2id, through this partial index, instead of every account every
-- five minutes on every node (issue 65). Small: an imported hash is replaced at the next sign-in.
-- On a large PostgreSQL database, build it first with CREATE INDEX CONCURRENTLY (docs/scaling.md).
CREATE INDEX IF NOT EXISTS users_imported_hashes ON users (id) WHERE substr(password_hash, 1, 10) <> '$argon2id$';
