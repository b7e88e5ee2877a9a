-- PostgreSQL announces changes to sessions and accounts so that every node drops its
-- cached copy (see the PostgreSQL migration of the same number). A SQLite database has
-- one node, which reads sessions directly: there is nothing to announce.
SELECT 1;
