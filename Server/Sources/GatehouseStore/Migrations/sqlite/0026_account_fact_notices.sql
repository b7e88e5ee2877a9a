-- PostgreSQL announces changes to the rows each node keeps of an account (see the PostgreSQL
-- migration of the same number). A SQLite database has one server process: its own writes drop
-- their copies as they commit, and another process's are seen by the PRAGMA data_version poll.
SELECT 1;
