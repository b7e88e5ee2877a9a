-- Supabase Auth (GoTrue) schema subset for tests: auth.users and auth.identities.
--
-- Source: GitHub repository supabase/auth (formerly supabase/gotrue),
--         commit bc32168e13fdc928c98b449fc76bc3fdb9a293c5, directory migrations/.
-- The template placeholder {{ index .Options "Namespace" }} is replaced by auth.
--
-- The statements below replay, in order, what these migrations do to
-- auth.users and auth.identities (structure only: columns, types, defaults,
-- NOT NULL, generated columns, primary keys, unique constraints / unique
-- indexes, the identities -> users foreign key):
--   00_init_auth_schema.up.sql
--   20210710035447_alter_users.up.sql
--   20210722035447_adds_confirmed_at.up.sql
--   20210730183235_add_email_change_confirmed.up.sql
--   20210909172000_create_identities_table.up.sql
--   20220114185340_add_banned_until.up.sql
--   20220323170000_add_user_reauthentication.up.sql
--   20220429102000_add_unique_idx.up.sql
--   20221215195500_modify_users_email_unique_index.up.sql
--   20221215195800_add_identities_email_column.up.sql
--   20230116124310_alter_phone_type.up.sql
--   20230116124412_add_deleted_at.up.sql
--   20231117164230_add_id_pkey_identities.up.sql
--   20240214120130_add_is_anonymous_column.up.sql
-- Other migrations that mention these tables only add non-unique indexes
-- (20211122151130, 20220114185221, 20221027105023), backfill rows
-- (20221125140132, 20221208132122, 20230131181311), enable RLS / grants
-- (20240612123726), or reference users(id) from other tables; they do not
-- change the two tables' structure and are not replayed here.
--
-- Intended for a fresh database (not re-runnable once applied).
-- Requires PostgreSQL 13+ (gen_random_uuid() is built in).

BEGIN;

CREATE SCHEMA IF NOT EXISTS auth;

-- 00_init_auth_schema: initial users table
CREATE TABLE auth.users (
    instance_id          uuid NULL,
    id                   uuid NOT NULL UNIQUE,
    aud                  varchar(255) NULL,
    "role"               varchar(255) NULL,
    email                varchar(255) NULL UNIQUE,
    encrypted_password   varchar(255) NULL,
    confirmed_at         timestamptz NULL,
    invited_at           timestamptz NULL,
    confirmation_token   varchar(255) NULL,
    confirmation_sent_at timestamptz NULL,
    recovery_token       varchar(255) NULL,
    recovery_sent_at     timestamptz NULL,
    email_change_token   varchar(255) NULL,
    email_change         varchar(255) NULL,
    email_change_sent_at timestamptz NULL,
    last_sign_in_at      timestamptz NULL,
    raw_app_meta_data    jsonb NULL,
    raw_user_meta_data   jsonb NULL,
    is_super_admin       boolean NULL,
    created_at           timestamptz NULL,
    updated_at           timestamptz NULL,
    CONSTRAINT users_pkey PRIMARY KEY (id)
);

-- 20210710035447_alter_users: phone columns; confirmed_at -> email_confirmed_at
ALTER TABLE auth.users
    ADD COLUMN phone                varchar(15) NULL UNIQUE DEFAULT NULL,
    ADD COLUMN phone_confirmed_at   timestamptz NULL DEFAULT NULL,
    ADD COLUMN phone_change         varchar(15) NULL DEFAULT '',
    ADD COLUMN phone_change_token   varchar(255) NULL DEFAULT '',
    ADD COLUMN phone_change_sent_at timestamptz NULL DEFAULT NULL;
ALTER TABLE auth.users RENAME COLUMN confirmed_at TO email_confirmed_at;

-- 20210722035447_adds_confirmed_at: generated confirmed_at
ALTER TABLE auth.users
    ADD COLUMN confirmed_at timestamptz
        GENERATED ALWAYS AS (LEAST(email_confirmed_at, phone_confirmed_at)) STORED;

-- 20210730183235_add_email_change_confirmed
ALTER TABLE auth.users
    ADD COLUMN email_change_token_current  varchar(255) NULL DEFAULT '',
    ADD COLUMN email_change_confirm_status smallint DEFAULT 0
        CHECK (email_change_confirm_status >= 0 AND email_change_confirm_status <= 2);
ALTER TABLE auth.users RENAME COLUMN email_change_token TO email_change_token_new;

-- 20210909172000_create_identities_table: initial identities table
CREATE TABLE auth.identities (
    id              text NOT NULL,
    user_id         uuid NOT NULL,
    identity_data   jsonb NOT NULL,
    provider        text NOT NULL,
    last_sign_in_at timestamptz NULL,
    created_at      timestamptz NULL,
    updated_at      timestamptz NULL,
    CONSTRAINT identities_pkey PRIMARY KEY (provider, id),
    CONSTRAINT identities_user_id_fkey FOREIGN KEY (user_id)
        REFERENCES auth.users (id) ON DELETE CASCADE
);

-- 20220114185340_add_banned_until
ALTER TABLE auth.users ADD COLUMN banned_until timestamptz NULL;

-- 20220323170000_add_user_reauthentication
ALTER TABLE auth.users
    ADD COLUMN reauthentication_token   varchar(255) NULL DEFAULT '',
    ADD COLUMN reauthentication_sent_at timestamptz NULL DEFAULT NULL;

-- 20220429102000_add_unique_idx: partial unique indexes on token columns
-- (values that are empty / whitespace / purely numeric are not covered)
CREATE UNIQUE INDEX confirmation_token_idx ON auth.users (confirmation_token)
    WHERE confirmation_token !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX recovery_token_idx ON auth.users (recovery_token)
    WHERE recovery_token !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX email_change_token_current_idx ON auth.users (email_change_token_current)
    WHERE email_change_token_current !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX email_change_token_new_idx ON auth.users (email_change_token_new)
    WHERE email_change_token_new !~ '^[0-9 ]*$';
CREATE UNIQUE INDEX reauthentication_token_idx ON auth.users (reauthentication_token)
    WHERE reauthentication_token !~ '^[0-9 ]*$';

-- 20221215195500_modify_users_email_unique_index: is_sso_user; the plain
-- unique constraint on email is replaced by a partial unique index
ALTER TABLE ONLY auth.users
    ADD COLUMN is_sso_user boolean NOT NULL DEFAULT false;
ALTER TABLE ONLY auth.users DROP CONSTRAINT users_email_key;
CREATE UNIQUE INDEX users_email_partial_key ON auth.users (email)
    WHERE (is_sso_user = false);

-- 20221215195800_add_identities_email_column: generated identities.email
ALTER TABLE ONLY auth.identities
    ADD COLUMN email text
        GENERATED ALWAYS AS (lower(identity_data ->> 'email')) STORED;

-- 20230116124310_alter_phone_type: phone / phone_change become text
ALTER TABLE auth.users
    ALTER COLUMN phone TYPE text,
    ALTER COLUMN phone_change TYPE text;

-- 20230116124412_add_deleted_at
ALTER TABLE auth.users ADD COLUMN deleted_at timestamptz NULL;

-- 20231117164230_add_id_pkey_identities: old text id becomes provider_id,
-- new uuid id is the primary key, (provider_id, provider) stays unique
ALTER TABLE auth.identities RENAME COLUMN id TO provider_id;
ALTER TABLE auth.identities
    DROP CONSTRAINT identities_pkey,
    ADD COLUMN id uuid DEFAULT gen_random_uuid() PRIMARY KEY;
ALTER TABLE auth.identities
    ADD CONSTRAINT identities_provider_id_provider_unique UNIQUE (provider_id, provider);

-- 20240214120130_add_is_anonymous_column
ALTER TABLE auth.users
    ADD COLUMN is_anonymous boolean NOT NULL DEFAULT false;

COMMIT;
