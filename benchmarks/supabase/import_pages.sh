#!/usr/bin/env bash
# What one page of `gatehouse import supabase` costs the Supabase database, by where the page is in
# the import: the query it runs now (after the last user read) beside a page by LIMIT … OFFSET.
#
#   benchmarks/supabase/import_pages.sh POSTGRES_ADMIN_URL [USERS]
#
# Makes a database `import_pages` next to POSTGRES_ADMIN_URL's, builds GoTrue's auth schema in it
# (Server/Tests/support/supabase_auth_schema.sql), fills USERS users (default 1,000,000), then
# times each query at five places in the import, twice, with psql's \timing. Drops the database.
set -euo pipefail
admin=${1:?usage: import_pages.sh POSTGRES_ADMIN_URL [USERS]}
users=${2:-1000000}
here=$(cd "$(dirname "$0")/../.." && pwd)
url="${admin%/*}/import_pages?${admin#*\?}"
[[ "$admin" == *\?* ]] || url="${admin%/*}/import_pages"
psql "$admin" -qc "DROP DATABASE IF EXISTS import_pages" -c "CREATE DATABASE import_pages"
trap 'psql "$admin" -qc "DROP DATABASE IF EXISTS import_pages"' EXIT
psql "$url" -q -v ON_ERROR_STOP=1 -f "$here/Server/Tests/support/supabase_auth_schema.sql"
# User g was created g seconds before the fill: the import reads the highest g first.
psql "$url" -q -v ON_ERROR_STOP=1 \
  -c "INSERT INTO auth.users (id, email, created_at) SELECT gen_random_uuid(), 'u' || g || '@example.com', now() - g * interval '1 second' FROM generate_series(1, $users) g" \
  -c "VACUUM ANALYZE auth.users"
columns="id::text, email::text, extract(epoch from created_at)::bigint"
for round in 1 2; do
  for done in 0 $((users / 4)) $((users / 2)) $((users * 3 / 4)) $((users - 1000)); do
    # The last user read so far, as the import carries it (`SupabaseAuthSource.Position`).
    IFS='|' read -r at id < <(psql "$url" -Atq -F '|' -c "SELECT COALESCE(created_at, '-infinity')::text, id FROM auth.users
      ORDER BY COALESCE(created_at, '-infinity'), id OFFSET GREATEST($done - 1, 0) LIMIT 1")
    after="WHERE (COALESCE(created_at, '-infinity'), id) > ('$at'::timestamptz, '$id'::uuid)"
    [[ $done -eq 0 ]] && after=""
    offset=$(psql "$url" -Atq -c '\timing on' -c "SELECT $columns FROM auth.users ORDER BY created_at NULLS FIRST, id LIMIT 500 OFFSET $done" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
    keyset=$(psql "$url" -Atq -c '\timing on' -c "SELECT $columns FROM auth.users $after ORDER BY COALESCE(created_at, '-infinity'), id LIMIT 500" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
    printf 'round %d, %8d users read: offset %8.1f ms, after the last user %8.1f ms\n' "$round" "$done" "$offset" "$keyset"
  done
done
