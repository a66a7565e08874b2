-- 0005_vault_keys: each namespace's vault has a random key of its own, with
-- which token ids are keyed hashes of their values ([EMAIL_3f9a2c]) rather
-- than numbers in order of first sight ([EMAIL_1]), which told a model how
-- many values the vault held and let it walk them. Tokens issued before this
-- migration keep their numbers and stay valid.

CREATE TABLE pii_keys (
    namespace  TEXT    NOT NULL PRIMARY KEY,
    key        BLOB    NOT NULL,
    created_at INTEGER NOT NULL
);
